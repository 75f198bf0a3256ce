"""Which CA bundle a request trusts, and one-line reasons from the nested errors requests raises."""

from __future__ import annotations

import ssl

import pytest
import requests
from urllib3.exceptions import MaxRetryError
from urllib3.exceptions import SSLError as Urllib3SSLError

from sanlens.config import TLSConfig
from sanlens.upstream.tls import Trust, tls_reason


def _as_requests_raises(inner: BaseException) -> requests.exceptions.SSLError:
    """requests.SSLError(MaxRetryError(reason=urllib3.SSLError(ssl error))), as a failed handshake arrives."""
    return requests.exceptions.SSLError(MaxRetryError(None, "/api/cluster", Urllib3SSLError(inner)))  # type: ignore[arg-type]


def test_the_bundle_in_use_is_named_as_requests_resolves_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    assert Trust(TLSConfig()).bundle().startswith("the default bundle (certifi) /")
    monkeypatch.setenv("CURL_CA_BUNDLE", "/etc/ssl/curl.pem")
    assert Trust(TLSConfig()).bundle() == "CURL_CA_BUNDLE /etc/ssl/curl.pem"
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", "/etc/ssl/corp.pem")
    assert Trust(TLSConfig()).bundle() == "REQUESTS_CA_BUNDLE /etc/ssl/corp.pem"
    assert Trust(TLSConfig(ca_file="/etc/sanlens/ca.pem")).bundle() == "ca_file /etc/sanlens/ca.pem"
    assert Trust(TLSConfig(insecure_skip_verify=True)).verify is False


def test_a_verification_failure_is_told_in_openssls_words() -> None:
    err = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
    err.verify_message = "unable to get local issuer certificate"
    assert (
        tls_reason(_as_requests_raises(err))
        == "certificate verify failed: unable to get local issuer certificate"
    )


def test_other_tls_errors_give_openssls_reason_on_one_line() -> None:
    err = ssl.SSLError(1, "[SSL: TLSV1_ALERT_PROTOCOL_VERSION] tlsv1 alert\nprotocol version")
    err.reason = "TLSV1_ALERT_PROTOCOL_VERSION"
    assert tls_reason(_as_requests_raises(err)) == "TLS error: TLSV1_ALERT_PROTOCOL_VERSION"
    assert tls_reason(requests.exceptions.SSLError("odd")) == "TLS error: SSLError"
    assert "\n" not in Trust(TLSConfig(ca_file="/x")).explain(_as_requests_raises(err))

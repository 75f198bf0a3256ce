"""How sources talk to what they poll: abortable HTTP reads, TLS verification, credentials that follow their files."""

from sanlens.cli import entry

entry()

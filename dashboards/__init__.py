"""The sanlens Grafana dashboards: ``lib`` builds panels, ``defs`` describes each dashboard, ``build`` writes them."""

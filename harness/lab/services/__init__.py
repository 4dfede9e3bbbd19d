"""Services a step deploys besides the sample server: one module per kind (harness.lab.services.nginx …), the
validation of `[services.<name>]` tables (harness.lab.services.config) and their deployment in dependency order
(harness.lab.services.deploy). The sample server is the implicit service `server` (harness.lab.services.tomcat).
"""

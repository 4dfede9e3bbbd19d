"""The services a step deploys: one module (or package) per kind (harness.lab.services.kinds finds them: tomcat, the
sample server; springjar, your jar; postgres; nginx; netty; webflux), the validation of `[services.<name>]` tables and a step's graph
(harness.lab.services.graph) and their deployment in dependency order (harness.lab.services.deploy). The sample server
is the service `server` (harness.lab.services.tomcat).
"""

# `warden serve` as a Nomad service job: Poseidon's runner API (REST + WebSocket) for CodeOcean or any
# Poseidon client, over runner pools in this cluster (template-<id> and <id>-<uuid> jobs, as
# Poseidon lays them out: either can take over the other's cluster).
#
# One instance per namespace: the pools of a namespace are managed by one process (two would both
# keep every pool full). Its runners go to the namespace the job runs in (NOMAD_NAMESPACE, set by
# Nomad for the task); run this job in a namespace of its own, e.g. `nomad job run -namespace
# poseidon warden-serve.nomad.hcl`, with runner jobs' datacenters set by --datacenter.
#
# The API listens on Poseidon's port 7200 (a static port: clients are configured with an address);
# the service's check is GET /api/v1/health, which answers 204 (503 with --pool-alert-threshold
# while a prewarming pool is emptier than that fraction; off here). On a stop or an update Nomad
# sends SIGTERM: running executions are told the server is going away, the pools stop (their
# runners stay in Nomad, used ones marked so), and a new instance takes them over.
#
# Authentication: clients send the token in the Poseidon-Token header. It comes from the Nomad
# variable nomad/jobs/warden-serve (key `token`):
#
#   nomad var put -namespace poseidon nomad/jobs/warden-serve token=$(openssl rand -hex 32)
#
# Nomad access: the Task API socket with the task's workload identity (Nomad 1.5+). The identity
# must write jobs, exec into allocations and read events in its namespace:
#
#   nomad acl policy apply -namespace poseidon -job warden-serve warden-serve warden-serve-policy.hcl
#
# with warden-serve-policy.hcl:
#
#   namespace "poseidon" { policy = "write" }
#
# Elsewhere (no ACLs, or a token of your own), set NOMAD_ADDR / NOMAD_TOKEN as for the Nomad CLI.
# The `warden` command must be on the client (npm install -g ./warden-0.1.0.tgz), or use the docker
# driver with an image that has it.

job "warden-serve" {
  type = "service"

  group "serve" {
    # One per namespace (see above).
    count = 1

    network {
      port "api" {
        static = 7200
      }
    }

    update {
      max_parallel     = 1
      health_check     = "checks"
      min_healthy_time = "10s"
      healthy_deadline = "2m"
    }

    service {
      provider = "nomad"
      name     = "warden-serve"
      port     = "api"
      tags     = ["poseidon-api", "metrics"]

      check {
        name     = "health"
        type     = "http"
        path     = "/api/v1/health"
        interval = "10s"
        timeout  = "2s"
      }
    }

    task "serve" {
      driver = "exec"

      config {
        command = "warden"
        args = [
          "--log-format=json",
          "serve",
          "--listen=${NOMAD_ADDR_api}",
          "--driver=docker",
          "--datacenter=dc1",
        ]
      }

      # Time to tell running executions and stop the pools before SIGKILL.
      kill_signal  = "SIGTERM"
      kill_timeout = "30s"

      identity {
        env = true
      }

      env {
        NOMAD_ADDR = "${NOMAD_UNIX_ADDR}"
      }

      template {
        data        = <<EOT
{{ with nomadVar "nomad/jobs/warden-serve" }}WARDEN_SERVE_TOKEN={{ .token }}{{ end }}
EOT
        destination = "secrets/serve.env"
        env         = true
      }

      resources {
        cpu    = 500
        memory = 512
      }
    }
  }
}

# Warden watching a whole Nomad cluster as 3 shards run as one Nomad job.
#
# Each allocation runs `warden watch --shard <its NOMAD_ALLOC_INDEX>/3`: it judges only the jobs whose
# (namespace, job ID) hash falls on its shard, so every job is judged by exactly one of them, and
# serves its own Prometheus metrics on a dynamic port, registered as a Nomad service (Prometheus
# finds them with nomad_sd_configs; the tag says which shard).
#
# To change the number of shards, change `count` and the n of `--shard` together. A rolling update
# then runs old and new shards side by side: the hash moves only the jobs the new shard takes.
#
# Warden reads Nomad through the Task API socket (Nomad 1.5+), with the task's workload identity
# as its token. That identity must be allowed to read every namespace's jobs, allocations,
# evaluations and deployments, and their events:
#
#   nomad acl policy apply -namespace default -job warden-watch warden-watch warden-watch-policy.hcl
#
# with warden-watch-policy.hcl:
#
#   namespace "*" { policy = "read" }
#
# Elsewhere (no ACLs, or a token from a variable), set NOMAD_ADDR / NOMAD_TOKEN as for the Nomad CLI.
# The `warden` command must be on the client (npm install -g ./warden-0.1.0.tgz), or use the docker
# driver with an image that has it.

job "warden-watch" {
  type = "service"

  group "warden" {
    # The n of --shard below.
    count = 3

    network {
      port "metrics" {}
    }

    update {
      max_parallel     = 1
      min_healthy_time = "10s"
      healthy_deadline = "2m"
    }

    service {
      provider = "nomad"
      name     = "warden-watch"
      port     = "metrics"
      tags     = ["metrics", "shard-${NOMAD_ALLOC_INDEX}"]

      check {
        name     = "metrics"
        type     = "http"
        path     = "/metrics"
        interval = "10s"
        timeout  = "2s"
      }
    }

    task "watch" {
      driver = "exec"

      config {
        command = "warden"
        args = [
          "--log-format=json",
          "watch",
          "--namespace=*",
          "--shard=${NOMAD_ALLOC_INDEX}/3",
          "--metrics=${NOMAD_ADDR_metrics}",
          "--json",
        ]
      }

      identity {
        env = true
      }

      env {
        NOMAD_ADDR = "${NOMAD_UNIX_ADDR}"
      }

      resources {
        cpu    = 200
        memory = 256
      }
    }
  }
}

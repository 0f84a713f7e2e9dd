// Package config is agentd's configuration: one YAML file, overridden by
// AGENTIC_* environment variables, overridden by command-line flags, over
// defaults that run out of the box on one machine.
//
// Invariants:
//
//  1. Precedence is defaults < file < environment < flags. Resolve applies
//     them in that order; a flag that was not given does not undo the file
//     or the environment, nor does an unset or empty variable.
//  2. Unknown file keys are errors naming file and line
//     ("agentd.yaml:7: unknown key slotz"); durations are strings ("30s").
//  3. Validate reports every problem at once (errors.Join), each wrapping
//     ErrInvalid and naming the file key of the field.
//  4. Default fills every field except Executor.Workdir, which stays empty
//     so that it follows Data wherever Data is set (WorkDir gives DATA/work).
//
// The file, with every key and its default:
//
//	data: ./data                  # AGENTIC_DATA            --data
//	name: <hostname>              # AGENTIC_NAME            --name
//	roles: [orchestrator, planner, executor, memory, ui]
//	                              # AGENTIC_ROLES (a,b,c)   --roles a,b,c
//	nats: []                      # AGENTIC_NATS (u1,u2)    --nats u1,u2   (empty: embedded server)
//	nats_listen: 127.0.0.1:4222   # AGENTIC_NATS_LISTEN     --nats-listen
//	nats_cluster_listen: ""       # AGENTIC_NATS_CLUSTER_LISTEN --nats-cluster-listen (empty: embedded server not clustered)
//	nats_routes: []               # AGENTIC_NATS_ROUTES     --nats-routes  nats://host:port,…
//	nats_cluster_name: agentic    # AGENTIC_NATS_CLUSTER_NAME --nats-cluster-name
//	nats_creds: ""                # AGENTIC_NATS_CREDS      --nats-creds   (external servers)
//	nats_tls_ca: ""               # AGENTIC_NATS_TLS_CA     --nats-tls-ca
//	nats_tls_cert: ""             # AGENTIC_NATS_TLS_CERT   --nats-tls-cert
//	nats_tls_key: ""              # AGENTIC_NATS_TLS_KEY    --nats-tls-key
//	http_listen: 127.0.0.1:8080   # AGENTIC_HTTP_LISTEN     --http-listen
//	probe_listen: ""              # AGENTIC_PROBE_LISTEN    --probe-listen
//	debug_listen: ""              # AGENTIC_DEBUG_LISTEN    --debug-listen (Go profiles; empty: off)
//	insecure: false               # AGENTIC_INSECURE        --insecure
//	gossip_listen: ""             # AGENTIC_GOSSIP_LISTEN   --gossip-listen (empty: no gossip)
//	gossip_advertise: ""          # AGENTIC_GOSSIP_ADVERTISE --gossip-advertise (needed when binding 0.0.0.0)
//	gossip_key_file: ""           # AGENTIC_GOSSIP_KEY_FILE --gossip-key-file (base64 of 16, 24 or 32 bytes)
//	gossip_label: ""              # AGENTIC_GOSSIP_LABEL    --gossip-label
//	gossip_preset: fast           # AGENTIC_GOSSIP_PRESET   --gossip-preset fast|lan
//	join: []                      # AGENTIC_JOIN (h1,h2)    --join h1,h2
//	log:
//	  level: info                 # AGENTIC_LOG_LEVEL       --log-level    debug|info|warn|error
//	  format: auto                # AGENTIC_LOG_FORMAT      --log-format   auto|text|json
//	executor:
//	  slots: <2 × CPUs>           # AGENTIC_EXECUTOR_SLOTS  --executor-slots
//	  default_timeout: 10m        # AGENTIC_EXECUTOR_TIMEOUT --executor-timeout
//	  workdir: ""                 # AGENTIC_EXECUTOR_WORKDIR --executor-workdir (empty: DATA/work; needed when run_as is another user)
//	  queue: -1                   # AGENTIC_EXECUTOR_QUEUE  --executor-queue (-1: 8 per slot; 0: none)
//	  capabilities: []            # AGENTIC_CAPABILITIES    --capabilities docker,gpu
//	  env_allow: []               # AGENTIC_EXECUTOR_ENV_ALLOW --executor-env-allow PATH,HOME,LC_* (empty: PATH,HOME,USER,LOGNAME,SHELL,LANG,LANGUAGE,LC_*,TERM,TZ,TMPDIR)
//	  run_as: ""                  # AGENTIC_EXECUTOR_RUN_AS --executor-run-as (empty: agentd's user; as root, empty refuses every shell step)
//	  max_open_files: 0           # AGENTIC_EXECUTOR_MAX_OPEN_FILES --executor-max-open-files (0: agentd's own)
//	  max_address_space: ""       # AGENTIC_EXECUTOR_MAX_ADDRESS_SPACE --executor-max-address-space 8GiB (empty: agentd's own)
//	  landlock: false             # AGENTIC_EXECUTOR_LANDLOCK --executor-landlock (confine steps' writes to the policy's file scope)
//	orchestrator:
//	  lease_ttl: ""               # AGENTIC_LEASE_TTL       --lease-ttl    (deprecated, ignored: a cluster setting now)
//	planner:
//	  base_url: http://127.0.0.1:11434/v1 # AGENTIC_PLANNER_BASE_URL --planner-base-url (Ollama's)
//	  model: ""                   # AGENTIC_PLANNER_MODEL   --planner-model (empty: plan files only)
//	  api_key_env: ""             # AGENTIC_PLANNER_API_KEY_ENV --planner-api-key-env (the variable that holds the key)
//	  timeout: 2m                 # AGENTIC_PLANNER_TIMEOUT --planner-timeout
//	  claim_timeout: 30s          # AGENTIC_PLANNER_CLAIM_TIMEOUT --planner-claim-timeout (deprecated, ignored with a warning: the cluster setting planning.claim_timeout governs)
//	  max_tokens: 8192            # AGENTIC_PLANNER_MAX_TOKENS --planner-max-tokens
//	  token_budget: 0             # AGENTIC_PLANNER_TOKEN_BUDGET --planner-token-budget (0: no bound)
//	  temperature: ""             # AGENTIC_PLANNER_TEMPERATURE --planner-temperature 0..2 (empty: the server's)
//	  seed: ""                    # AGENTIC_PLANNER_SEED    --planner-seed (empty: none)
//	  mode: plan                  # AGENTIC_PLANNER_MODE    --planner-mode plan|react (react: a step at a time)
//	  candidates: 1               # AGENTIC_PLANNER_CANDIDATES --planner-candidates 1..8 (the best by a recorded score)
//	notify:
//	  webhook: ""                 # AGENTIC_NOTIFY_WEBHOOK  --notify-webhook (gates that open, POSTed as JSON; leader only)
//	  exec: ""                    # AGENTIC_NOTIFY_EXEC     --notify-exec (shell command, the JSON on stdin)
//	  batch: 5s                   # AGENTIC_NOTIFY_BATCH    --notify-batch
//	ledger:
//	  bootstrap_timeout: 30s      # AGENTIC_LEDGER_BOOTSTRAP_TIMEOUT --ledger-bootstrap-timeout (0: never copy a peer's ledger)
//	disk:
//	  floor: ""                   # AGENTIC_DISK_FLOOR      --disk-floor   512MiB or 5% (empty: min(256MiB, 5% of the disk))
//	  jetstream_max_store: ""     # AGENTIC_JETSTREAM_MAX_STORE --jetstream-max-store 10GiB (empty: half of the data dir's disk)
//	policy: ""                    # AGENTIC_POLICY          --policy       (first policy an orchestrator records)
//
// AGENTIC_CONFIG names the file when the caller passes no path to Resolve.
// List variables and flags are comma-separated.
//
// Usage in a command:
//
//	flags := config.Default()        // scratch target: shows defaults in --help
//	fs := pflag.NewFlagSet("agentd", pflag.ContinueOnError)
//	path := fs.String("config", "", "configuration file")
//	flags.BindFlags(fs)
//	if err := fs.Parse(os.Args[1:]); err != nil { ... }
//	cfg, err := config.Resolve(*path, os.Environ(), fs) // validated
//	logger := cfg.NewLogger(os.Stderr)
package config

package server

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/cluster/member"
	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/store"
)

// Config is the operator's configuration of `airlock serve` and `airlock mcp`. It is
// read from an optional JSON file, then AIRLOCK_* variables, then flags; each
// later source overrides the earlier ones (see Load).
type Config struct {
	// Listen is the HTTP address. With no tokens only a loopback address is used.
	Listen string `json:"listen"`
	// AllowedHosts are host names a server without tokens answers to besides
	// its loopback names (see sameOrigin).
	AllowedHosts []string `json:"allowed_hosts,omitempty"`
	// DataDir holds job records, job logs and, by default, the audit log.
	DataDir string `json:"data_dir"`
	// AuditLog is the audit log's path; default <data_dir>/audit.log.
	AuditLog string `json:"audit_log"`
	// DefaultImage runs when a request names none.
	DefaultImage string `json:"default_image"`
	// Pull is "never" (the default: an image the engine lacks fails the run,
	// naming it) or "missing" (it is pulled). Pulling is the operator's decision.
	Pull executor.PullPolicy `json:"pull"`
	// Pool is how many warm sandboxes to keep per image (airlock's init waits in
	// each for one command); 0 for an image turns its pool off.
	Pool map[string]int `json:"pool"`
	// Ceilings bound every request, whatever the tenant.
	Ceilings Ceilings `json:"ceilings"`
	// Egress bounds the hosts a run may reach through airlock's proxy.
	Egress Egress `json:"egress"`
	// Secrets are the operator's, which every tenant may name in a request
	// (docs/server.md, "Secrets"); a tenant's own of the same name come first.
	Secrets []api.Secret `json:"secrets,omitempty"`
	// SecretsKeyFile holds the key (32 bytes, base64 or hex) that seals the
	// secrets tenants store and the key of the secrets' authority, in the
	// data dir. Default <data_dir>/secrets.key, made at the first start;
	// one kept off the data dir leaves a copy of the data dir sealed.
	SecretsKeyFile string `json:"secrets_key_file,omitempty"`
	// SandboxCAFile, when set, is a PEM file of authorities every sandbox
	// trusts besides its image's own: those of a network that re-signs
	// outbound TLS. The proxy trusts them too, besides the host's, where it
	// opens TLS itself (to the hosts of secrets). docs/server.md, "Network".
	SandboxCAFile string `json:"sandbox_ca_file,omitempty"`
	// RotateAuthority replaces the secrets' authority at this start (it is
	// replaced anyway within 30 days of its end). Sandboxes started before
	// trust the old one.
	RotateAuthority bool `json:"rotate_authority,omitempty"`
	// Networks and Runtimes a request may ask for; AllowRoot lets it ask for uid 0.
	Networks  []string `json:"networks"`
	Runtimes  []string `json:"runtimes"`
	AllowRoot bool     `json:"allow_root"`
	// Policy judges every command, unless the caller's tenant has its own.
	Policy policy.Config `json:"policy"`
	// Tokens are the bearer tokens the server accepts, each bound to a tenant.
	Tokens []Token `json:"tokens"`
	// TenantDefaults applies to every tenant with no entry in Tenants.
	TenantDefaults Tenant `json:"tenant_defaults"`
	// Tenants holds per-tenant limits and policies, by tenant name.
	Tenants map[string]Tenant `json:"tenants,omitempty"`
	// MaxBodyBytes bounds a request body.
	MaxBodyBytes int64 `json:"max_body_bytes"`
	// KeepJobs, when set (seconds), has the server forget ended jobs (their
	// records and logs) that ended longer ago, at its periodic sweep; in
	// cluster mode also the cluster's rows and output of such jobs.
	KeepJobs float64 `json:"keep_jobs,omitempty"`
	// KillJobsOnShutdown kills background jobs when the server stops; by default
	// they go on running, for the next server on the data dir to adopt.
	KillJobsOnShutdown bool `json:"kill_jobs_on_shutdown"`
	// SkipImageBuilds keeps the server from building, in the background at
	// its start, the sandbox images whose recipe is missing from the engine
	// or changed (airlock/debian takes minutes); they are then built when a
	// run first asks for them, or by `airlock images build`.
	SkipImageBuilds bool `json:"skip_image_builds,omitempty"`
	// WriteTimeout (seconds; default 60) bounds how long a plain answer may
	// take to be written, and is the grace a run's answer gets past the run's
	// own time (docs/server.md, "Slow clients").
	WriteTimeout float64 `json:"write_timeout,omitempty"`
	// Cluster, when its Database is set, makes the server a node of a cluster
	// coordinated through PostgreSQL (docs/cluster.md).
	Cluster ClusterConfig `json:"cluster,omitzero"`
}

// ClusterConfig is a node's side of cluster mode. Without Database the server
// is one process with its embedded store, and the rest is ignored.
type ClusterConfig struct {
	// Database is the PostgreSQL URL (postgres://user:password@host/db). Its
	// password never appears in logs, errors or --print-config.
	Database string `json:"database,omitempty"`
	// NodeID names the node; empty: the id kept in <data_dir>/node-id, made
	// from the host name and a random suffix at the first start, so that a
	// restarted server on the same data dir is the same node.
	NodeID string `json:"node_id,omitempty"`
	// Advertise is the host:port the other nodes reach this one's API at; empty:
	// the listen address, with the host name when it listens on every address.
	Advertise string `json:"advertise,omitempty"`
	// Slots is how many sandboxes the node runs at once; 0: the tenants'
	// default max_concurrent.
	Slots int `json:"slots,omitempty"`
	// Memory is the node's sandbox memory budget in bytes; 0: Slots times the
	// memory ceiling, room for every slot at the largest run.
	Memory int64 `json:"memory,omitempty"`
	// Lease is how long one heartbeat keeps the node alive, in seconds (default
	// 15). It heartbeats every third of it and sweeps every half.
	Lease float64 `json:"lease,omitempty"`
	// AdminTenants may drain and undrain nodes (POST /v1/nodes/{id}/drain).
	// Without tokens the anonymous caller, on loopback, may.
	AdminTenants []string `json:"admin_tenants,omitempty"`
}

// Lease bounds: a lease shorter than a second leaves a heartbeat no time to
// cross a busy network; one longer than ten minutes leaves a dead node's jobs
// waiting that long.
const (
	minLease     = time.Second
	maxLease     = 10 * time.Minute
	defaultLease = 15 * time.Second
)

// Ceilings are the operator's upper bounds on what a request may ask for.
type Ceilings struct {
	Memory  int64   `json:"memory"`  // bytes
	CPUs    float64 `json:"cpus"`    // cores; 0 is the engine's CPU count
	Pids    int64   `json:"pids"`    // tasks
	Timeout float64 `json:"timeout"` // seconds, foreground runs
	// WorkspaceSize bounds one workspace, in bytes (held in the engine host's memory).
	WorkspaceSize int64 `json:"workspace_size"`
}

// Tenant is what one tenant may do. Zero fields take the server's values.
type Tenant struct {
	// MaxConcurrent bounds the tenant's foreground runs in flight plus its running
	// background jobs; past it a new run gets 429.
	MaxConcurrent int `json:"max_concurrent,omitempty"`
	// MaxQueued bounds the tenant's requests waiting for a place (on one server,
	// or in the cluster's queue); past it a new one gets 429 at once.
	MaxQueued int `json:"max_queued,omitempty"`
	// MaxMemory (bytes) and MaxTimeout (seconds) lower the server's ceilings.
	MaxMemory  int64   `json:"max_memory,omitempty"`
	MaxTimeout float64 `json:"max_timeout,omitempty"`
	// MaxWorkspaces and MaxWorkspaceBytes bound the tenant's workspaces: how
	// many, and the sum of their sizes.
	MaxWorkspaces     int   `json:"max_workspaces,omitempty"`
	MaxWorkspaceBytes int64 `json:"max_workspace_bytes,omitempty"`
	// AllowedImages, when set, are the only images the tenant may run.
	AllowedImages []string `json:"allowed_images,omitempty"`
	// Policy replaces the server's policy for this tenant.
	Policy *policy.Config `json:"policy,omitempty"`
	// Egress narrows the server's egress bounds for this tenant.
	Egress *TenantEgress `json:"egress,omitempty"`
	// Secrets are the tenant's own, which no other tenant may name.
	Secrets []api.Secret `json:"secrets,omitempty"`
}

// Egress is the server's side of the network by allow-list
// (docs/server.md, "Network").
type Egress struct {
	// Allowed are the host patterns a request may name at all; empty (the
	// default) allows none.
	Allowed []string `json:"allowed"`
	// Default applies to a request that names no host; it lies within Allowed.
	Default []string `json:"default,omitempty"`
	// AllowCIDRs are private ranges opened on purpose (an internal mirror).
	AllowCIDRs []string `json:"allow_cidrs,omitempty"`
	// UpstreamProxy (http://host:port) is the proxy allowed traffic leaves through.
	UpstreamProxy string `json:"upstream_proxy,omitempty"`
	// SocketDir is where airlock listens for its sandboxes' relays, a
	// directory the engine's host sees at the same path (empty: one under
	// the system's temporary directory; see executor.EgressConfig.SocketDir).
	SocketDir string `json:"socket_dir,omitempty"`
}

// TenantEgress narrows the server's Egress for one tenant.
type TenantEgress struct {
	Allowed []string `json:"allowed,omitempty"`
	Default []string `json:"default,omitempty"`
}

// Token binds a bearer token to a tenant.
type Token struct {
	Token  string `json:"token"`
	Tenant string `json:"tenant"`
}

// DefaultConfig returns the shipped defaults of `airlock serve`.
func DefaultConfig() Config {
	ec := executor.DefaultConfig()
	return Config{
		Listen:       "127.0.0.1:8080",
		DefaultImage: ec.DefaultImage,
		Pull:         executor.PullNever,
		Ceilings: Ceilings{
			Memory:        ec.Ceilings.Memory,
			Pids:          ec.Ceilings.Pids,
			Timeout:       ec.Ceilings.Timeout.Seconds(),
			WorkspaceSize: ec.MaxWorkspaceSize,
		},
		Networks:       ec.Networks,
		Runtimes:       ec.Runtimes,
		TenantDefaults: Tenant{MaxConcurrent: 16, MaxQueued: 1000, MaxWorkspaces: 16, MaxWorkspaceBytes: 4 << 30},
		Pool:           map[string]int{ec.DefaultImage: 2},
		// Room for the largest stdin the executor takes, plus command and env.
		MaxBodyBytes: ec.MaxStdin*2 + int64(ec.MaxArgBytes)*2 + 64<<10,
	}
}

// ErrUsage is returned by Load for a command line the flag package refused; it
// has printed the reason and the usage already.
var ErrUsage = errors.New("usage")

// setting is one configuration knob reachable by flag and environment variable.
type setting struct {
	name string // the flag; the variable is AIRLOCK_ plus the name in upper case with _
	help string
	set  func(*Config, string) error
}

// switches are the settings that are on or off: their flag alone says on.
var switches = map[string]bool{"allow-root": true, "kill-jobs-on-shutdown": true, "skip-image-builds": true}

func (s setting) env() string {
	return "AIRLOCK_" + strings.ToUpper(strings.ReplaceAll(s.name, "-", "_"))
}

var settings = []setting{
	{"listen", "HTTP listen address", func(c *Config, v string) error { c.Listen = v; return nil }},
	{"allowed-hosts", "without tokens: Host names to answer besides localhost and loopback addresses, comma-separated",
		func(c *Config, v string) error { c.AllowedHosts = splitList(v); return nil }},
	{"data", "data dir: job records and logs, and the audit log", func(c *Config, v string) error { c.DataDir = v; return nil }},
	{"audit-log", "audit log path (default <data>/audit.log)", func(c *Config, v string) error { c.AuditLog = v; return nil }},
	{"tokens", "bearer tokens: token:tenant,token:tenant", func(c *Config, v string) error {
		toks, err := parseTokens(v)
		c.Tokens = toks
		return err
	}},
	{"default-image", "image of requests that name none", func(c *Config, v string) error { c.DefaultImage = v; return nil }},
	{"pool", "warm sandboxes per image, IMAGE[@RUNTIME]=N,... (default airlock/minimal=2, the default runtime; N=0: none)", func(c *Config, v string) error {
		pool := map[string]int{}
		for _, kv := range splitList(v) {
			img, n, ok := strings.Cut(kv, "=")
			size, err := strconv.Atoi(n)
			if !ok || img == "" || err != nil || size < 0 || size > 64 {
				return fmt.Errorf("%q is not IMAGE=N with N in 0..64", kv)
			}
			pool[img] = size
		}
		c.Pool = pool
		return nil
	}},
	{"pull", "images the engine lacks: never (fail, naming the image) or missing (pull them)", func(c *Config, v string) error {
		c.Pull = executor.PullPolicy(v)
		return nil
	}},
	{"max-memory", "memory ceiling, e.g. 8g", func(c *Config, v string) error { return parseBytes(v, &c.Ceilings.Memory) }},
	{"max-cpus", "CPU ceiling in cores (default: the engine's CPUs)", func(c *Config, v string) error {
		return parseFloat(v, &c.Ceilings.CPUs)
	}},
	{"max-workspace-size", "ceiling of one workspace's size, e.g. 2g (held in memory)", func(c *Config, v string) error { return parseBytes(v, &c.Ceilings.WorkspaceSize) }},
	{"max-pids", "pids ceiling", func(c *Config, v string) error { return parseInt(v, &c.Ceilings.Pids) }},
	{"max-timeout", "foreground timeout ceiling: 10m, or seconds", func(c *Config, v string) error {
		return parseSeconds(v, &c.Ceilings.Timeout)
	}},
	{"max-concurrent", "runs in flight plus running jobs per tenant", func(c *Config, v string) error {
		return parseCount(v, &c.TenantDefaults.MaxConcurrent)
	}},
	{"max-queued", "requests per tenant waiting for a place (on this server, or in the cluster's queue)", func(c *Config, v string) error {
		return parseCount(v, &c.TenantDefaults.MaxQueued)
	}},
	{"allowed-images", "images tenants may run, comma-separated (default: any)", func(c *Config, v string) error {
		c.TenantDefaults.AllowedImages = splitList(v)
		return nil
	}},
	{"egress-allowed", "host patterns runs may reach through airlock's proxy, comma-separated (pypi.org,*.pythonhosted.org,github.com:443; default: none)", func(c *Config, v string) error {
		c.Egress.Allowed = splitList(v)
		return nil
	}},
	{"egress-default", "host patterns of a run that names none, comma-separated (default: none, no network)", func(c *Config, v string) error {
		c.Egress.Default = splitList(v)
		return nil
	}},
	{"egress-allow-cidrs", "private address ranges the proxy may reach, comma-separated (an internal mirror: 10.1.2.0/24)", func(c *Config, v string) error {
		c.Egress.AllowCIDRs = splitList(v)
		return nil
	}},
	{"egress-upstream-proxy", "http://host:port of a proxy that allowed traffic leaves through", func(c *Config, v string) error {
		c.Egress.UpstreamProxy = v
		return nil
	}},
	{"egress-socket-dir", "directory for the sandboxes' relay sockets, seen by the engine's host at the same path (default: under the temporary directory)", func(c *Config, v string) error {
		c.Egress.SocketDir = v
		return nil
	}},
	{"sandbox-ca-file", "PEM file of authorities every sandbox trusts besides its image's own, for a network that re-signs TLS; the proxy trusts them too (default: none)", func(c *Config, v string) error {
		c.SandboxCAFile = v
		return nil
	}},
	{"secrets-key-file", "file of the key (32 bytes, base64 or hex) sealing stored secrets and the secrets' authority (default <data>/secrets.key, made at the first start)", func(c *Config, v string) error {
		c.SecretsKeyFile = v
		return nil
	}},
	{"rotate-authority", "true: replace the secrets' authority at this start", func(c *Config, v string) error {
		b, err := strconv.ParseBool(v)
		c.RotateAuthority = b
		return err
	}},
	{"networks", "networks a request may join, comma-separated (none is always allowed)", func(c *Config, v string) error {
		c.Networks = splitList(v)
		return nil
	}},
	{"runtimes", "OCI runtimes a request may ask for, comma-separated", func(c *Config, v string) error {
		c.Runtimes = splitList(v)
		return nil
	}},
	{"allow-root", "let requests run as uid 0", func(c *Config, v string) error { return parseBool(v, &c.AllowRoot) }},
	{"policy-mode", "policy mode: off, standard or strict", func(c *Config, v string) error {
		c.Policy.Mode = policy.Mode(v)
		return nil
	}},
	{"max-body", "largest request body, e.g. 40m", func(c *Config, v string) error { return parseBytes(v, &c.MaxBodyBytes) }},
	{"keep-jobs", "forget ended jobs this long after their end, e.g. 168h (default: keep them)", func(c *Config, v string) error {
		return parseSeconds(v, &c.KeepJobs)
	}},
	{"kill-jobs-on-shutdown", "kill background jobs when the server stops", func(c *Config, v string) error {
		return parseBool(v, &c.KillJobsOnShutdown)
	}},
	{"write-timeout", "longest a plain answer may take to be written, and the grace of a run's answer past its own time: 60s, or seconds", func(c *Config, v string) error {
		return parseSeconds(v, &c.WriteTimeout)
	}},
	{"skip-image-builds", "do not build missing or changed sandbox images in the background at start (they are built when a run first asks for one)", func(c *Config, v string) error {
		return parseBool(v, &c.SkipImageBuilds)
	}},
	{"database", "cluster mode: the PostgreSQL URL, postgres://user:password@host/db; the server becomes a node of the cluster it coordinates (default: none, one process)", func(c *Config, v string) error {
		if err := checkDatabaseURL(v); err != nil {
			return err
		}
		c.Cluster.Database = v
		return nil
	}},
	{"node-id", "cluster mode: this node's id (default: kept in <data>/node-id, made from the host name at the first start)", func(c *Config, v string) error {
		c.Cluster.NodeID = v
		return nil
	}},
	{"advertise", "cluster mode: host:port other nodes reach this node's API at (default: the listen address)", func(c *Config, v string) error {
		c.Cluster.Advertise = v
		return nil
	}},
	{"node-slots", "cluster mode: sandboxes this node runs at once (default: --max-concurrent)", func(c *Config, v string) error {
		return parseCount(v, &c.Cluster.Slots)
	}},
	{"node-memory", "cluster mode: this node's sandbox memory budget, e.g. 32g (default: slots times --max-memory)", func(c *Config, v string) error {
		return parseBytes(v, &c.Cluster.Memory)
	}},
	{"lease", "cluster mode: how long a heartbeat keeps this node alive, 1s to 10m (default 15s)", func(c *Config, v string) error {
		return parseSeconds(v, &c.Cluster.Lease)
	}},
	{"admin-tenants", "cluster mode: tenants whose tokens may drain nodes, comma-separated (default: none; without tokens, the loopback caller)", func(c *Config, v string) error {
		c.Cluster.AdminTenants = splitList(v)
		return nil
	}},
}

// Load builds the effective configuration of the command name ("serve" or "mcp")
// from args and the environment: defaults, then the file named by --config or
// AIRLOCK_CONFIG, then AIRLOCK_* variables, then flags. printConfig reports
// --print-config.
func Load(name string, args []string, getenv func(string) string, out io.Writer) (cfg Config, printConfig bool, err error) {
	cfg = DefaultConfig()
	fs := flag.NewFlagSet("airlock "+name, flag.ContinueOnError)
	fs.SetOutput(out)
	file := fs.String("config", getenv("AIRLOCK_CONFIG"), "configuration file (JSON; env AIRLOCK_CONFIG)")
	fs.BoolVar(&printConfig, "print-config", false, "print the effective configuration (tokens redacted) and exit")
	flagged := map[string]string{}
	for _, s := range settings {
		define := fs.Func
		if switches[s.name] {
			define = fs.BoolFunc // --kill-jobs-on-shutdown alone means true
		}
		define(s.name, s.help+" (env "+s.env()+")", func(v string) error {
			flagged[s.name] = v
			return nil
		})
	}
	fs.Usage = func() {
		fmt.Fprintf(out, "Usage: airlock %s [flags]\n\nFlags override AIRLOCK_* variables, which override the --config file.\n\nFlags:\n", name)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return cfg, false, ErrUsage // the flag package has said why
	}
	if fs.NArg() > 0 {
		return cfg, false, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *file != "" {
		if err := readConfigFile(*file, &cfg); err != nil {
			return cfg, false, err
		}
	}
	for _, s := range settings {
		if v := getenv(s.env()); v != "" {
			if err := s.set(&cfg, v); err != nil {
				return cfg, false, fmt.Errorf("%s: %w", s.env(), err)
			}
		}
	}
	for _, s := range settings {
		if v, ok := flagged[s.name]; ok {
			if err := s.set(&cfg, v); err != nil {
				return cfg, false, fmt.Errorf("--%s: %w", s.name, err)
			}
		}
	}
	if cfg.DataDir == "" {
		cfg.DataDir = store.DefaultDir()
	}
	if cfg.AuditLog == "" {
		cfg.AuditLog = filepath.Join(cfg.DataDir, "audit.log")
	}
	if cfg.SecretsKeyFile == "" {
		cfg.SecretsKeyFile = filepath.Join(cfg.DataDir, defaultKeyFile)
	}
	return cfg, printConfig, cfg.validate()
}

func readConfigFile(path string, cfg *Config) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	if why := invalidText(data); why != "" {
		// Go's decoder would put U+FFFD in its place, in a secret's value too.
		return fmt.Errorf("config file %s: %s", path, why)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields() // a misspelt ceiling must not be silently ignored
	if err := dec.Decode(cfg); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	return nil
}

// validate reports the first setting that cannot work, naming it.
func (c *Config) validate() error {
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("listen: %q is not host:port", c.Listen)
	}
	seen := map[string]bool{}
	for i, t := range c.Tokens {
		switch {
		case t.Token == "" || t.Tenant == "":
			return fmt.Errorf("tokens[%d]: token and tenant are both required", i)
		case strings.ContainsAny(t.Token, " \t\r\n:,"):
			return fmt.Errorf("tokens[%d]: a token cannot hold spaces, ':' or ','", i)
		case seen[t.Token]:
			return fmt.Errorf("tokens[%d]: the token of tenant %q is given twice", i, t.Tenant)
		}
		if err := checkTenantName(t.Tenant); err != nil {
			return fmt.Errorf("tokens[%d].tenant: %w", i, err)
		}
		seen[t.Token] = true
	}
	for name := range c.Tenants {
		if err := checkTenantName(name); err != nil {
			return fmt.Errorf("tenants: %w", err)
		}
	}
	ec, err := c.ExecutorConfig()
	if err != nil {
		return err
	}
	check := func(name string, t Tenant) error {
		if t.MaxConcurrent < 0 || t.MaxQueued < 0 || t.MaxMemory < 0 || t.MaxTimeout < 0 || t.MaxWorkspaces < 0 || t.MaxWorkspaceBytes < 0 {
			return fmt.Errorf("%s: limits must not be negative", name)
		}
		if t.Egress != nil {
			if err := ec.CheckEgress(executor.Caller{EgressAllowed: t.Egress.Allowed, EgressDefault: t.Egress.Default}); err != nil {
				return fmt.Errorf("%s.egress: %w", name, err)
			}
		}
		for i, sec := range t.Secrets {
			caller := executor.Caller{}
			if t.Egress != nil {
				caller.EgressAllowed, caller.EgressDefault = t.Egress.Allowed, t.Egress.Default
			}
			if err := ec.CheckSecret(sec, caller); err != nil {
				return fmt.Errorf("%s.secrets[%d]: %w", name, i, err)
			}
		}
		if t.Policy != nil {
			if _, err := policy.New(*t.Policy); err != nil {
				return fmt.Errorf("%s.policy.%w", name, err)
			}
		}
		return nil
	}
	if c.TenantDefaults.MaxConcurrent < 1 {
		return errors.New("tenant_defaults.max_concurrent: must be at least 1")
	}
	if err := check("tenant_defaults", c.TenantDefaults); err != nil {
		return err
	}
	if len(c.TenantDefaults.Secrets) > 0 {
		return errors.New("tenant_defaults.secrets: a tenant's secrets are its own; the operator's for every tenant are the top-level secrets")
	}
	for name, t := range c.Tenants {
		if err := check("tenants."+name, t); err != nil {
			return err
		}
	}
	if c.MaxBodyBytes < 1<<10 {
		return errors.New("max_body_bytes: must be at least 1KiB")
	}
	return c.Cluster.validate()
}

// checkTenantName refuses a tenant name with a '/': the vault keeps a
// tenant's secrets under "secret/TENANT/NAME", and tenant "team" must not
// reach the secrets of tenant "team/ops" (docs/server.md, "Secrets").
func checkTenantName(name string) error {
	if strings.Contains(name, "/") {
		return fmt.Errorf("tenant name %q holds a '/', which no tenant name may", name)
	}
	return nil
}

// validate reports the first cluster setting that cannot work, naming it as
// the configuration file does (the flags carry the same names).
func (c *ClusterConfig) validate() error {
	if c.Database == "" {
		return nil
	}
	if err := checkDatabaseURL(c.Database); err != nil {
		return fmt.Errorf("cluster.database: %w", err)
	}
	if c.NodeID != "" && !member.ValidID(c.NodeID) {
		return fmt.Errorf("cluster.node_id: %q is not 1 to 63 letters, digits, '.', '_' or '-'", c.NodeID)
	}
	if c.Advertise != "" {
		if _, _, err := net.SplitHostPort(c.Advertise); err != nil {
			return fmt.Errorf("cluster.advertise: %q is not host:port", c.Advertise)
		}
	}
	switch lease := seconds(c.Lease); {
	case c.Slots < 0:
		return errors.New("cluster.slots: must not be negative")
	case c.Memory < 0:
		return errors.New("cluster.memory: must not be negative")
	case c.Lease != 0 && (lease < minLease || lease > maxLease || math.IsNaN(c.Lease)):
		return fmt.Errorf("cluster.lease: %gs is not between %s and %s", c.Lease, minLease, maxLease)
	}
	return nil
}

// checkDatabaseURL refuses what is not a PostgreSQL URL, without repeating
// the URL (it may hold a password).
func checkDatabaseURL(v string) error {
	u, err := url.Parse(v)
	switch {
	case err != nil:
		return errors.New("not a URL (want postgres://user:password@host/db)")
	case u.Scheme != "postgres" && u.Scheme != "postgresql":
		return fmt.Errorf("scheme %q is not postgres:// or postgresql://", u.Scheme)
	}
	return nil
}

// ExecutorConfig is the executor's side of c.
func (c *Config) ExecutorConfig() (executor.Config, error) {
	ec := executor.DefaultConfig()
	ec.DataDir = c.DataDir
	ec.DefaultImage = c.DefaultImage
	ec.Ceilings.Memory = c.Ceilings.Memory
	ec.Ceilings.CPUs = c.Ceilings.CPUs
	ec.Ceilings.Pids = c.Ceilings.Pids
	ec.Ceilings.Timeout = seconds(c.Ceilings.Timeout)
	ec.MaxWorkspaceSize = c.Ceilings.WorkspaceSize
	ec.WorkspaceSize = min(ec.WorkspaceSize, ec.MaxWorkspaceSize)
	// Defaults over a lowered ceiling come down to it.
	ec.Defaults.Memory = min(ec.Defaults.Memory, ec.Ceilings.Memory)
	ec.Defaults.Pids = min(ec.Defaults.Pids, ec.Ceilings.Pids)
	ec.Defaults.Timeout = min(ec.Defaults.Timeout, ec.Ceilings.Timeout)
	if c.Ceilings.CPUs > 0 {
		ec.Defaults.CPUs = min(ec.Defaults.CPUs, c.Ceilings.CPUs)
	}
	ec.Networks = c.Networks
	if !slices.Contains(ec.Networks, "none") {
		ec.Networks = append([]string{"none"}, ec.Networks...)
	}
	ec.Runtimes = c.Runtimes
	if len(ec.Runtimes) == 0 {
		return ec, errors.New("runtimes: at least one runtime is required")
	}
	if !slices.Contains(ec.Runtimes, ec.DefaultRuntime) {
		ec.DefaultRuntime = ec.Runtimes[0]
	}
	ec.AllowRoot = c.AllowRoot
	ec.Egress.Allowed = append([]string{}, c.Egress.Allowed...) // a server bounds: empty allows none
	ec.Egress.Default, ec.Egress.AllowCIDRs, ec.Egress.UpstreamProxy = c.Egress.Default, c.Egress.AllowCIDRs, c.Egress.UpstreamProxy
	ec.Egress.SocketDir = c.Egress.SocketDir
	ec.Secrets = c.Secrets
	if err := c.sandboxCAs(&ec); err != nil {
		return ec, err
	}
	if c.Pull != executor.PullNever && c.Pull != executor.PullMissing {
		return ec, fmt.Errorf("pull: %q is not never or missing", c.Pull)
	}
	ec.Pull = c.Pull
	p, err := policy.New(c.Policy)
	if err != nil {
		return ec, fmt.Errorf("policy.%w", err)
	}
	ec.Policy = p
	switch {
	case c.Ceilings.Memory < 6<<20:
		return ec, errors.New("ceilings.memory: must be at least 6MiB")
	case c.Ceilings.Pids < 2:
		return ec, errors.New("ceilings.pids: must be at least 2")
	case c.Ceilings.WorkspaceSize < 1<<20:
		return ec, errors.New("ceilings.workspace_size: must be at least 1MiB")
	case c.Ceilings.Timeout <= 0 || math.IsNaN(c.Ceilings.Timeout):
		return ec, errors.New("ceilings.timeout: must be a positive number of seconds")
	case c.Ceilings.CPUs < 0:
		return ec, errors.New("ceilings.cpus: must not be negative")
	}
	return ec, nil
}

// sandboxCAs reads sandbox_ca_file into ec: the certificates for the
// sandboxes' trust bundle, and the proxy's roots for the origins it opens
// TLS to, the host's and these.
func (c *Config) sandboxCAs(ec *executor.Config) error {
	if c.SandboxCAFile == "" {
		return nil
	}
	return LoadSandboxCAs(c.SandboxCAFile, ec)
}

// LoadSandboxCAs reads file, PEM certificates of the authorities of a network
// that re-signs TLS, into ec: for every sandbox's trust bundle, and for the
// proxy's roots beside the host's. The CLI without a server reads
// $AIRLOCK_SANDBOX_CA_FILE with it.
func LoadSandboxCAs(file string, ec *executor.Config) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("sandbox_ca_file: %w", err)
	}
	certs, err := executor.ParseCertificates(data)
	if err != nil {
		return fmt.Errorf("sandbox_ca_file %s: %w", file, err)
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool() // a host with no store of its own
	}
	var bundle []byte
	for _, cert := range certs {
		roots.AddCert(cert)
		bundle = append(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})...)
	}
	ec.SandboxCAs, ec.Egress.OriginRoots = string(bundle), roots
	return nil
}

// Redacted returns c with every token replaced by a short fingerprint, and the
// database URL's password removed, fit to print.
func (c Config) Redacted() Config {
	c.Tokens = slices.Clone(c.Tokens)
	for i, t := range c.Tokens {
		c.Tokens[i].Token = "redacted:" + Fingerprint(t.Token)
	}
	c.Cluster.Database = member.RedactURL(c.Cluster.Database)
	c.Secrets = redactSecrets(c.Secrets)
	c.Tenants = maps.Clone(c.Tenants)
	for name, t := range c.Tenants {
		t.Secrets = redactSecrets(t.Secrets)
		c.Tenants[name] = t
	}
	return c
}

// Fingerprint names a token in logs without revealing it.
func Fingerprint(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:4])
}

func parseTokens(v string) ([]Token, error) {
	var toks []Token
	for i, pair := range splitList(v) {
		tok, tenant, ok := strings.Cut(pair, ":")
		if !ok || tok == "" || tenant == "" {
			return nil, fmt.Errorf("entry %d is not token:tenant", i+1)
		}
		toks = append(toks, Token{Token: tok, Tenant: tenant})
	}
	return toks, nil
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func parseBytes(v string, dst *int64) error {
	n, err := api.ParseSize(v)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%q is not a positive size", v)
	}
	*dst = n
	return nil
}

func parseInt(v string, dst *int64) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return fmt.Errorf("%q is not a positive integer", v)
	}
	*dst = n
	return nil
}

// parseCount reads a positive int.
func parseCount(v string, dst *int) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return fmt.Errorf("%q is not a positive integer", v)
	}
	*dst = n
	return nil
}

func parseFloat(v string, dst *float64) error {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("%q is not a non-negative number", v)
	}
	*dst = f
	return nil
}

func parseSeconds(v string, dst *float64) error {
	d, err := api.ParseDuration(v)
	if err != nil {
		return err
	}
	if d == 0 {
		return fmt.Errorf("%q is not a positive duration", v)
	}
	*dst = d.Seconds()
	return nil
}

func parseBool(v string, dst *bool) error {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("%q is not true or false", v)
	}
	*dst = b
	return nil
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// redactSecrets is secrets with every value replaced.
func redactSecrets(secrets []api.Secret) []api.Secret {
	out := slices.Clone(secrets)
	for i := range out {
		out[i].Value = "redacted"
	}
	return out
}

// memberConfig is how this server joins its cluster as a node: the node's
// slots default to the tenants' default concurrency, its memory to that many
// sandboxes at the memory ceiling.
func (c Config) memberConfig() member.Config {
	cc := c.Cluster
	mc := member.Config{Database: cc.Database, ID: cc.NodeID, DataDir: c.DataDir, Advertise: cc.Advertise, Listen: c.Listen,
		Lease: defaultLease, Slots: cc.Slots, Memory: cc.Memory}
	if cc.Lease > 0 {
		mc.Lease = seconds(cc.Lease)
	}
	if mc.Slots == 0 {
		mc.Slots = c.TenantDefaults.MaxConcurrent
	}
	if mc.Memory == 0 {
		mc.Memory = int64(mc.Slots) * c.Ceilings.Memory
	}
	return mc
}

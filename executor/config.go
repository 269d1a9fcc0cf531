package executor

import (
	"crypto/x509"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"time"

	"github.com/airlock-sandbox/airlock/internal/egress"

	"github.com/airlock-sandbox/airlock/policy"
)

// Limits is one set of the resource figures a Spec may ask for.
type Limits struct {
	Memory    int64         // bytes
	CPUs      float64       // cores
	Pids      int64         // tasks
	TmpfsSize int64         // bytes, for each of /tmp, /workspace and /dev/shm
	Timeout   time.Duration // wall clock of a foreground run
	MaxOutput int64         // bytes kept per stream in a Result
}

// Config is the operator's side of the contract: defaults for what a Spec leaves
// out, and ceilings no Spec may exceed.
type Config struct {
	// DefaultImage runs when a Spec names none. airlock builds its own images
	// (images/) on first use when they are missing.
	DefaultImage string
	// Defaults fill the limits a Spec leaves at zero.
	Defaults Limits
	// Ceilings bound every Spec; a request over one is an invalid spec.
	// Ceilings.CPUs of 0 means the engine's CPU count.
	Ceilings Limits
	// DefaultTailLines is the number of lines in a Result's tails.
	DefaultTailLines int
	// DefaultUser runs the command; AllowRoot permits a Spec to ask for uid 0.
	DefaultUser string
	AllowRoot   bool
	// Networks a Spec may join; the first is not implied, "none" is the default.
	Networks []string
	// Runtimes a Spec may ask for, and the one used when it asks for none. A runtime
	// allowed here but absent from the engine fails the run with a clear error.
	Runtimes       []string
	DefaultRuntime string
	// PatchedRunc is the engine runtime runc sandboxes run under when the
	// engine offers it at start: `make runc` registers a patched runc as
	// PatchedRunc (the default). Empty always uses the engine's own runc. A
	// Result's runtime says runc either way (SECURITY.md, "The runc airlock runs").
	PatchedRunc string
	// KillGrace is the time between SIGTERM and SIGKILL when a run is ended.
	KillGrace time.Duration
	// MaxArgBytes bounds command, argv, env and labels together; MaxStdin bounds stdin.
	MaxArgBytes int
	MaxStdin    int64
	// DataDir holds the records and logs of background jobs; empty means
	// store.DefaultDir() ($AIRLOCK_DATA, or under the user's data home).
	DataDir string
	// MaxBackgroundTimeout bounds the timeout a background job may ask for (it
	// has none unless it asks).
	MaxBackgroundTimeout time.Duration
	// LogCap is how many bytes of each stream of a background job are kept on
	// disk; past it the job's output is counted, not kept.
	LogCap int64
	// Pull says whether an image the engine lacks is pulled (PullMissing) or the
	// run fails naming it (PullNever). airlock's own images are built, never pulled.
	Pull PullPolicy
	// WorkspaceSize is the size of a workspace whose request names none;
	// MaxWorkspaceSize bounds any. A workspace's files are held in the engine
	// host's memory (docs/DESIGN.md, "Workspaces").
	WorkspaceSize    int64
	MaxWorkspaceSize int64
	// InitPath is airlock's init (cmd/airlock-init), PID 1 of every
	// foreground run: exact output, resource usage and OOM kills measured inside
	// the sandbox, the deadline kept there. DefaultConfig finds it with
	// InitBinary; New fails when it is missing or cannot run in a sandbox,
	// saying how to get it. EngineInit asks for the engine's init instead.
	InitPath string
	// Egress bounds the hosts runs may reach through airlock's proxy
	// (docs/DESIGN.md, "Network by allow-list").
	Egress EgressConfig
	// Secrets are the operator's, which every caller may ask for by name
	// (Spec.Secrets); a Caller's own come first (docs/DESIGN.md, "Secrets").
	Secrets []Secret
	// SandboxCAs, when set, are PEM certificates every run under airlock's
	// init trusts besides its image's own: the authorities of a network that
	// re-signs outbound TLS. The init writes them into the run's trust
	// bundle, as airlock's authority for a run's secrets (see trustVars).
	SandboxCAs string
	// Policy judges every command before a container exists; nil checks nothing.
	Policy *policy.Policy
	// Logger receives airlock's own messages (image builds, cleanup failures).
	Logger *slog.Logger
}

// EgressConfig is the operator's side of the network by allow-list: what a
// Spec's Egress may name, what applies when it names nothing, which private
// ranges are opened on purpose, and how much one run may use.
type EgressConfig struct {
	// Allowed are the patterns ("pypi.org", "*.pythonhosted.org",
	// "github.com:443") a Spec's Egress must lie within. nil bounds nothing:
	// the library's and the CLI's caller is its own operator. A server sets
	// it, empty unless configured.
	Allowed []string
	// Default applies to a Spec that names no host; empty means no network.
	Default []string
	// AllowCIDRs open private ranges the proxy refuses otherwise (an
	// internal package mirror on 10.1.2.0/24).
	AllowCIDRs []string
	// UpstreamProxy, when set (http://host:port), is the proxy every
	// allowed connection leaves through.
	UpstreamProxy string
	// Per run: connections open at once, bytes each way, and the lifetime
	// of one connection. Zero takes the defaults (DefaultConfig).
	MaxConns                int
	MaxBytesIn, MaxBytesOut int64
	MaxLifetime             time.Duration
	// Resolver looks names up for the proxy; nil is the system's. Tests
	// name their own origins through one.
	Resolver egress.Resolver
	// SocketDir is where airlock listens for its sandboxes' relays, one Unix
	// socket each, in a directory the engine bind-mounts into the sandbox:
	// the engine's host must see it at the same path (airlock in a container
	// mounts it from the host at the same path). Empty is a directory under
	// the system's temporary one. Where the engine cannot see it, the relay
	// goes over an exec's stdio instead: it works, at a tenth of the speed.
	SocketDir string
	// Authority terminates TLS for the hosts of a run's secrets, and only
	// theirs; nil makes one for the process on first use, which a sandbox
	// started by another process does not trust. A server keeps its own.
	Authority *egress.Authority
	// OriginRoots verify the hosts of a run's secrets, which the proxy
	// reaches over its own TLS; nil is the system's roots. Tests trust their
	// own authority through it.
	OriginRoots *x509.CertPool
}

// PullPolicy is the operator's choice about images the engine lacks.
type PullPolicy string

// The pull policies.
const (
	PullNever   PullPolicy = "never"
	PullMissing PullPolicy = "missing"
)

// DefaultConfig returns the shipped defaults (docs/sandbox.md).
func DefaultConfig() Config {
	return Config{
		DefaultImage: "airlock/minimal",
		Defaults: Limits{
			Memory:    512 << 20,
			CPUs:      1,
			Pids:      256,
			TmpfsSize: 64 << 20,
			Timeout:   60 * time.Second,
			MaxOutput: 1 << 20,
		},
		Ceilings: Limits{
			Memory:    8 << 30,
			Pids:      4096,
			TmpfsSize: 1 << 30,
			Timeout:   3600 * time.Second,
			MaxOutput: 64 << 20,
		},
		DefaultTailLines:     100,
		DefaultUser:          "65534:65534",
		Networks:             []string{"none"},
		Runtimes:             []string{"runc", "runsc"},
		DefaultRuntime:       "runc",
		PatchedRunc:          PatchedRunc,
		KillGrace:            2 * time.Second,
		MaxBackgroundTimeout: 24 * time.Hour,
		LogCap:               64 << 20,
		MaxArgBytes:          1 << 20,
		MaxStdin:             16 << 20,
		Pull:                 PullMissing, // the library's and the CLI's; a server's default is never
		InitPath:             InitBinary(),
		WorkspaceSize:        256 << 20,
		MaxWorkspaceSize:     2 << 30,
		Egress:               EgressConfig{MaxConns: 64, MaxBytesIn: 4 << 30, MaxBytesOut: 1 << 30, MaxLifetime: time.Hour},
		Policy:               policy.Default(),
		Logger:               slog.New(slog.NewTextHandler(os.Stderr, nil)),
	}
}

// check reports a Config whose defaults break its own ceilings.
func (c *Config) check() error {
	d, m := c.Defaults, c.Ceilings
	switch {
	case c.DefaultImage == "":
		return fmt.Errorf("config: DefaultImage is empty")
	case d.Memory < minMemory || d.Memory > m.Memory:
		return fmt.Errorf("config: default memory %s outside %s..%s", formatBytes(d.Memory), formatBytes(minMemory), formatBytes(m.Memory))
	case d.CPUs <= 0 || d.CPUs > m.CPUs:
		return fmt.Errorf("config: default cpus %g outside 0..%g", d.CPUs, m.CPUs)
	case d.Pids < 2 || d.Pids > m.Pids:
		return fmt.Errorf("config: default pids %d outside 2..%d", d.Pids, m.Pids)
	case d.TmpfsSize < 1<<20 || d.TmpfsSize > m.TmpfsSize:
		return fmt.Errorf("config: default tmpfs size %s outside 1MiB..%s", formatBytes(d.TmpfsSize), formatBytes(m.TmpfsSize))
	case d.Timeout <= 0 || d.Timeout > m.Timeout:
		return fmt.Errorf("config: default timeout %s outside 0..%s", d.Timeout, m.Timeout)
	case d.MaxOutput < 0 || d.MaxOutput > m.MaxOutput:
		return fmt.Errorf("config: default max output %s outside 0..%s", formatBytes(d.MaxOutput), formatBytes(m.MaxOutput))
	case c.DefaultTailLines < 0:
		return fmt.Errorf("config: DefaultTailLines is negative")
	case c.KillGrace < 0:
		return fmt.Errorf("config: KillGrace is negative")
	case !userSpec.MatchString(c.DefaultUser):
		return fmt.Errorf("config: DefaultUser %q is not uid[:gid] or a name", c.DefaultUser)
	case !slices.Contains(c.Networks, "none"):
		return fmt.Errorf("config: Networks must include \"none\", the default network")
	case c.WorkspaceSize < minWorkspaceSize || c.WorkspaceSize > c.MaxWorkspaceSize:
		return fmt.Errorf("config: default workspace size %s outside %s..%s", formatBytes(c.WorkspaceSize), formatBytes(minWorkspaceSize), formatBytes(c.MaxWorkspaceSize))
	case c.MaxArgBytes <= 0 || c.MaxStdin < 0:
		return fmt.Errorf("config: MaxArgBytes must be positive and MaxStdin not negative")
	case !slices.Contains(c.Runtimes, c.DefaultRuntime):
		return fmt.Errorf("config: DefaultRuntime %q is not among Runtimes", c.DefaultRuntime)
	case c.PatchedRunc != "" && (!runtimeRef.MatchString(c.PatchedRunc) || c.PatchedRunc == "runsc"):
		return fmt.Errorf("config: PatchedRunc %q is not the name of a runc runtime", c.PatchedRunc)
	case c.MaxBackgroundTimeout <= 0:
		return fmt.Errorf("config: MaxBackgroundTimeout must be positive")
	case c.LogCap < 1<<10:
		return fmt.Errorf("config: LogCap %s is below 1KiB", formatBytes(c.LogCap))
	case c.Pull != PullNever && c.Pull != PullMissing:
		return fmt.Errorf("config: Pull %q is not never or missing", c.Pull)
	case c.Logger == nil:
		return fmt.Errorf("config: Logger is nil")
	}
	if _, err := c.egressBounds(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if _, err := c.upstreamProxy(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if c.SandboxCAs != "" {
		if c.InitPath == EngineInit {
			return fmt.Errorf("config: SandboxCAs need airlock's init, which writes the sandbox's trust bundle")
		}
		if _, err := ParseCertificates([]byte(c.SandboxCAs)); err != nil {
			return fmt.Errorf("config: SandboxCAs: %w", err)
		}
	}
	for i, sec := range c.Secrets {
		if err := c.CheckSecret(sec, Caller{}); err != nil {
			return fmt.Errorf("config: secrets[%d]: %w", i, err)
		}
	}
	return nil
}

// egressBounds parses the Egress bounds; Allowed stays nil when unbounded.
func (c *Config) egressBounds() (egress.Bounds, error) {
	var b egress.Bounds
	var err error
	if c.Egress.Allowed != nil {
		if b.Allowed, err = egress.ParseRules(c.Egress.Allowed); err != nil {
			return b, fmt.Errorf("egress.allowed: %w", err)
		}
		if b.Allowed == nil {
			b.Allowed = []egress.Rule{}
		}
	}
	if b.Default, err = egress.ParseRules(c.Egress.Default); err != nil {
		return b, fmt.Errorf("egress.default: %w", err)
	}
	for _, s := range c.Egress.AllowCIDRs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return b, fmt.Errorf("egress.allow_cidrs: %q: %w", s, err)
		}
		b.AllowCIDRs = append(b.AllowCIDRs, p.Masked())
	}
	if b.Allowed != nil {
		if err := b.Check(); err != nil {
			return b, err
		}
	}
	return b, nil
}

func (c *Config) upstreamProxy() (*url.URL, error) {
	if c.Egress.UpstreamProxy == "" {
		return nil, nil
	}
	u, err := url.Parse(c.Egress.UpstreamProxy)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("egress.upstream_proxy: %q is not http://host:port", c.Egress.UpstreamProxy)
	}
	return u, nil
}

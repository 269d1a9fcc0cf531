// Package tcairlock starts a real, throw-away airlock server for a test suite,
// the way testcontainers-go's modules start Postgres or Redis:
//
//	ctr, err := tcairlock.Run(ctx)
//	defer testcontainers.TerminateContainer(ctr)
//	cli, err := ctr.Client(ctx)
//	res, err := cli.Run(ctx, executor.Spec{Command: "echo hi"}, nil, nil)
//
// The server runs from airlock's own image, built offline from this module's
// Dockerfile the first time (no registry is needed: the context is the airlock
// binary, built with the Go toolchain, and the host's static busybox). It drives
// the engine of the test through the engine's socket, as docker-compose.yml
// ships it, so its sandboxes are real containers on that engine. Terminate stops
// the server gracefully with its background jobs killed, so no sandbox outlives
// the container.
//
// On a host where testcontainers cannot tell the engine's address (a test
// process inside a container that shares the engine's network), set
// TESTCONTAINERS_HOST_OVERRIDE=localhost.
package tcairlock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	mobycontainer "github.com/moby/moby/api/types/container"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/airlock-sandbox/airlock/client"
	"github.com/airlock-sandbox/airlock/policy"
)

const (
	// ImageRepo is the repository of the server image this module builds.
	ImageRepo = "airlock/server"
	// Port is the server's HTTP port inside the container.
	Port = "8080/tcp"
	// dockerSocket is the engine's socket, on the host and in the container.
	dockerSocket = "/var/run/docker.sock"
	configPath   = "/etc/airlock/config.json"
)

// Container is a running airlock server.
type Container struct {
	testcontainers.Container
	token string
}

// options are what the module's own customizers set.
type options struct {
	tokens  []string // token:tenant
	config  map[string]any
	policy  *policy.Config
	volume  string
	imageOK bool // the caller named an image: build none
}

// Option is a customizer of this module. It also satisfies
// testcontainers.ContainerCustomizer, so that module options and testcontainers'
// own mix in one list.
type Option func(*options) error

// Customize does nothing: Run reads Options itself.
func (o Option) Customize(*testcontainers.GenericContainerRequest) error { return nil }

// WithTokens sets the server's bearer tokens, each "token:tenant" (as in
// AIRLOCK_TOKENS). Token and Client use the first. Without it the server gets one
// random token for the tenant "test".
func WithTokens(tokens ...string) Option {
	return func(o *options) error {
		for _, t := range tokens {
			if tok, tenant, ok := strings.Cut(t, ":"); !ok || tok == "" || tenant == "" {
				return fmt.Errorf("tcairlock: token %q is not token:tenant", t)
			}
		}
		o.tokens = append(o.tokens, tokens...)
		return nil
	}
}

// WithPolicy sets the server's policy (as `airlock serve --config` takes it
// under "policy").
func WithPolicy(p policy.Config) Option {
	return func(o *options) error {
		o.policy = &p
		return nil
	}
}

// WithPolicyFile reads the server's policy from a JSON file, as `airlock check
// --policy FILE` takes it.
func WithPolicyFile(path string) Option {
	return func(o *options) error {
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("tcairlock: policy file: %w", err)
		}
		var p policy.Config
		if err := json.Unmarshal(data, &p); err != nil {
			return fmt.Errorf("tcairlock: policy file %s: %w", path, err)
		}
		o.policy = &p
		return nil
	}
}

// WithConfig sets entries of the server's configuration file (the keys of
// `airlock serve --config`, e.g. "ceilings", "tenants", "tenant_defaults").
// Later calls add to earlier ones.
func WithConfig(cfg map[string]any) Option {
	return func(o *options) error {
		if o.config == nil {
			o.config = map[string]any{}
		}
		for k, v := range cfg {
			o.config[k] = v
		}
		return nil
	}
}

// WithDataVolume keeps the server's data dir (job records, logs, audit log) on
// the named engine volume, created when missing, so that a second server on the
// same volume adopts the first one's jobs. The volume is the caller's to remove.
func WithDataVolume(name string) Option {
	return func(o *options) error {
		o.volume = name
		return nil
	}
}

// Run starts an airlock server and waits until it is ready (/readyz: the engine
// answers). opts are this module's Options and any testcontainers
// ContainerCustomizer (testcontainers.WithImage names a server image to use
// instead of building one). On an error after the container was created, the
// returned Container is not nil, so that it can be terminated.
func Run(ctx context.Context, opts ...testcontainers.ContainerCustomizer) (*Container, error) {
	var o options
	var rest []testcontainers.ContainerCustomizer
	probe := testcontainers.GenericContainerRequest{}
	for _, opt := range opts {
		if mo, ok := opt.(Option); ok {
			if err := mo(&o); err != nil {
				return nil, err
			}
			continue
		}
		rest = append(rest, opt)
		if err := opt.Customize(&probe); err == nil && probe.Image != "" {
			o.imageOK = true
		}
	}
	if len(o.tokens) == 0 {
		o.tokens = []string{randomToken() + ":test"}
	}
	token, _, _ := strings.Cut(o.tokens[0], ":")

	image := ""
	if !o.imageOK {
		ref, err := serverImage(ctx)
		if err != nil {
			return nil, err
		}
		image = ref
	}
	config := map[string]any{}
	for k, v := range o.config {
		config[k] = v
	}
	if o.policy != nil {
		config["policy"] = o.policy
	}
	configJSON, err := json.Marshal(config)
	if err != nil {
		return nil, fmt.Errorf("tcairlock: config: %w", err)
	}

	mounts := testcontainers.ContainerMounts{}
	if o.volume != "" {
		mounts = append(mounts, testcontainers.VolumeMount(o.volume, "/data"))
	}
	module := []testcontainers.ContainerCustomizer{
		testcontainers.WithEnv(map[string]string{
			"AIRLOCK_TOKENS":                strings.Join(o.tokens, ","),
			"AIRLOCK_CONFIG":                configPath,
			"AIRLOCK_KILL_JOBS_ON_SHUTDOWN": "true", // Terminate leaves no sandbox behind
		}),
		testcontainers.WithFiles(testcontainers.ContainerFile{
			Reader: strings.NewReader(string(configJSON)), ContainerFilePath: configPath, FileMode: 0o644,
		}),
		testcontainers.WithExposedPorts(Port),
		testcontainers.WithLabels(map[string]string{"io.airlock.component": "server"}),
		testcontainers.WithMounts(mounts...),
		testcontainers.WithHostConfigModifier(func(hc *mobycontainer.HostConfig) {
			hc.Binds = append(hc.Binds, dockerSocket+":"+dockerSocket)
		}),
		testcontainers.WithWaitStrategy(wait.ForHTTP("/readyz").WithPort(Port).WithStartupTimeout(2 * time.Minute)),
	}
	ctr, err := testcontainers.Run(ctx, image, append(module, rest...)...)
	var c *Container
	if ctr != nil {
		c = &Container{Container: ctr, token: token}
	}
	if err != nil {
		return c, fmt.Errorf("tcairlock: start the server: %w", err)
	}
	return c, nil
}

// URL returns the server's base URL, http://host:port, as the test reaches it.
func (c *Container) URL(ctx context.Context) (string, error) {
	host, err := c.Host(ctx)
	if err != nil {
		return "", err
	}
	port, err := c.MappedPort(ctx, Port)
	if err != nil {
		return "", err
	}
	return "http://" + net.JoinHostPort(host, port.Port()), nil
}

// Token returns the bearer token Client uses: the first of WithTokens.
func (c *Container) Token() string { return c.token }

// Client returns airlock's Go client of the server, as the tenant of Token.
func (c *Container) Client(ctx context.Context) (*client.Client, error) {
	url, err := c.URL(ctx)
	if err != nil {
		return nil, err
	}
	return client.New(url, c.token)
}

// Terminate stops the server gracefully (SIGTERM: it kills its background jobs
// and removes their sandboxes, and lets foreground runs finish), then removes the
// container.
func (c *Container) Terminate(ctx context.Context, opts ...testcontainers.TerminateOption) error {
	timeout := 90 * time.Second
	stopErr := c.Container.Stop(ctx, &timeout)
	if err := c.Container.Terminate(ctx, opts...); err != nil {
		return err
	}
	return stopErr
}

// HTTPClient returns an http.Client that sends Token as its bearer token on
// every request: for clients of the API other than airlock's own, such as an
// MCP client of /mcp.
func (c *Container) HTTPClient() *http.Client {
	return &http.Client{Transport: bearer{token: c.token, next: http.DefaultTransport}}
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func randomToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-sandbox/airlock/cluster/peer"
	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/server"
)

// serveCmd is `airlock serve`: the HTTP API and /mcp until SIGTERM or SIGINT.
func serveCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, printConfig, err := server.Load("serve", args, os.Getenv, stderr)
	if err != nil {
		return flagError(err)
	}
	if printConfig {
		return printJSON(stdout, cfg.Redacted())
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	if len(cfg.Tokens) == 0 {
		host, port, _ := net.SplitHostPort(cfg.Listen)
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			log.Warn("no tokens configured: listening on loopback only instead of the address asked for; set AIRLOCK_TOKENS to serve other hosts",
				"asked", cfg.Listen, "listen", net.JoinHostPort("127.0.0.1", port))
			cfg.Listen = net.JoinHostPort("127.0.0.1", port)
		} else {
			log.Warn("no tokens configured: every caller on this host is the anonymous tenant; the server listens on loopback only")
		}
	}
	ex, svc, err := openService(cfg, log)
	if err != nil {
		return err
	}
	defer ex.Close()

	streams, endStreams := context.WithCancel(context.Background())
	defer endStreams()
	timeouts := server.DefaultTimeouts
	if cfg.WriteTimeout > 0 {
		timeouts.Write = time.Duration(cfg.WriteTimeout * float64(time.Second))
	}
	srv := server.NewHTTPServer(cfg.Listen, server.Handler(svc, streams), log, timeouts)
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		svc.Close(context.Background(), false)
		return err
	}
	runc, runcVersion := ex.RuncRuntime()
	log.Info("airlock serving", "url", "http://"+ln.Addr().String(), "version", version, "data_dir", ex.DataDir(),
		"audit_log", cfg.AuditLog, "tenants_with_tokens", len(cfg.Tokens), "runc_runtime", runc, "runc_version", runcVersion)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(server.ErrorsAsJSON(ln)) }()
	if !cfg.SkipImageBuilds {
		// The server answers meanwhile: a run whose image is still missing
		// waits for it with "building" events, or is told so.
		built := ex.BuildImagesInBackground(ctx)
		go func() {
			if err := <-built; err != nil && ctx.Err() == nil {
				log.Warn("building the sandbox images in the background failed; a run that needs one builds it then, or run `airlock images build`", "err", err)
			}
		}()
	}

	select {
	case err := <-served:
		svc.Close(context.Background(), false)
		return err
	case <-ctx.Done():
	}
	// Stop accepting; event streams and waits end now, foreground runs finish
	// (or time out) first; background jobs go on for the next server to adopt.
	grace := time.Duration(cfg.Ceilings.Timeout*float64(time.Second)) + 30*time.Second
	log.Info("shutting down: no new requests; waiting for foreground runs", "at_most", grace.String(),
		"kill_jobs", cfg.KillJobsOnShutdown)
	endStreams()
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("shutdown", "err", err)
	}
	if err := svc.Close(sctx, cfg.KillJobsOnShutdown); err != nil {
		log.Warn("close", "err", err)
	}
	log.Info("stopped")
	if err := <-served; err != nil && err != http.ErrServerClosed {
		return err
	}
	return nil
}

// mcpCmd is `airlock mcp`: the MCP tools over stdin and stdout. Logs go to stderr.
func mcpCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, printConfig, err := server.Load("mcp", args, os.Getenv, stderr)
	if err != nil {
		return flagError(err)
	}
	if printConfig {
		return printJSON(stderr, cfg.Redacted()) // stdout belongs to the protocol
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	if cfg.Cluster.Database != "" {
		// An agent's stdio server is no node: on the data dir of a node it would
		// share the node's id and heartbeat for it.
		log.Warn("airlock mcp is not a node of a cluster: --database is for airlock serve; ignored")
		cfg.Cluster = server.ClusterConfig{}
	}
	ex, svc, err := openService(cfg, log)
	if err != nil {
		return err
	}
	defer ex.Close()
	defer svc.Close(context.Background(), false)
	err = svc.MCPServer(server.Anonymous, version).Run(ctx, &mcp.StdioTransport{})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func openService(cfg server.Config, log *slog.Logger) (*executor.Executor, *server.Service, error) {
	ec, err := cfg.ExecutorConfig()
	if err != nil {
		return nil, nil, err
	}
	ec.Logger = log
	keyFile, made, err := cfg.EnsureSecretsKey()
	if err != nil {
		return nil, nil, err
	}
	if made {
		log.Warn("made a secrets key: it seals the secrets tenants store; keep a copy, or set secrets_key_file to one kept off the data dir",
			"secrets_key_file", keyFile)
	} else {
		log.Info("secrets key", "secrets_key_file", keyFile)
	}
	if ec.Egress.Authority, err = cfg.SecretsAuthority(); err != nil {
		return nil, nil, err
	}
	ex, err := executor.New(executor.WithConfig(ec), executor.WithPool(cfg.Pool))
	if err != nil {
		return nil, nil, err
	}
	if err := reconcile(ex); err != nil {
		ex.Close()
		return nil, nil, err
	}
	svc, err := server.NewService(ex, cfg, log, version, server.WithPeers(peer.Dial))
	if err != nil {
		ex.Close()
		return nil, nil, err
	}
	return ex, svc, nil
}

// flagError keeps the flag package's own message from being printed twice.
func flagError(err error) error {
	if errors.Is(err, server.ErrUsage) {
		return errReported
	}
	return err
}

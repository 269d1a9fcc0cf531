package server

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/airlock-sandbox/airlock/api"
)

// sameOrigin guards a server that has no tokens. Such a server listens on
// loopback, where a browser is too: a page from anywhere could post to it (a
// cross-site request) or, through DNS rebinding, read from it under a name of
// its own. So every request must name the server by one of its own loopback
// names (Host), and a request from a page must come from the server's own
// origin (Origin). With tokens the guard is not needed: a page cannot send an
// Authorization header across origins without a CORS preflight, which this
// server never grants (SECURITY.md).
func (a *httpAPI) sameOrigin(next http.Handler) http.Handler {
	if len(a.svc.cfg.Tokens) > 0 {
		return next
	}
	hosts := localNames(a.svc.cfg.Listen, a.svc.cfg.AllowedHosts)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := checkOrigin(r, hosts); err != nil {
			a.svc.authFailed("", "http", r.RemoteAddr, err.Message)
			a.fail(w, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// localNames are the host names a no-token server answers to: loopback, the
// host it listens on, and the names the operator allows.
func localNames(listen string, allowed []string) []string {
	names := []string{"localhost", "127.0.0.1", "::1"}
	if host, _, err := net.SplitHostPort(listen); err == nil && host != "" {
		names = append(names, strings.ToLower(host))
	}
	for _, h := range allowed {
		names = append(names, strings.ToLower(h))
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// checkOrigin refuses a request whose Host is not one of hosts, or whose Origin
// is another origin than the one it asked for.
func checkOrigin(r *http.Request, hosts []string) *api.Error {
	forbidden := func(format string, args ...any) *api.Error {
		return api.NewError("forbidden", "", fmt.Sprintf(format, args...))
	}
	if !knownHost(r.Host, hosts) {
		return forbidden("Host %q is not a name of this server; a server without tokens answers only to %s "+
			"(the operator may allow more with --allowed-hosts)", r.Host, strings.Join(hosts, ", "))
	}
	origin := r.Header.Get("Origin")
	if origin == "" { // not sent by a page: curl, the CLI, a program
		return nil
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !strings.EqualFold(u.Host, r.Host) {
		return forbidden("Origin %q is not this server's own (%s): a server without tokens takes no requests from other sites' pages", origin, r.Host)
	}
	return nil
}

// knownHost reports whether hostport names one of hosts, on any port.
func knownHost(hostport string, hosts []string) bool {
	if hostport == "" {
		return false
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	return slices.Contains(hosts, host)
}

package egress_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"

	"github.com/airlock-sandbox/airlock/internal/egress"
)

func ExampleBounds_Admit() {
	allowed, _ := egress.ParseRules([]string{"pypi.org", "*.pythonhosted.org", "github.com:443"})
	server := egress.Bounds{Allowed: allowed}

	rules, err := server.Admit([]string{"PyPI.org", "files.pythonhosted.org:443"})
	fmt.Println(rules, err)

	_, err = server.Admit([]string{"github.com"}) // ports 80 and 443; only 443 is allowed
	fmt.Println(err)
	// Output:
	// [pypi.org files.pythonhosted.org:443] <nil>
	// egress host "github.com" is outside egress.allowed (pypi.org, *.pythonhosted.org, github.com:443)
}

// staticResolver names every host 127.0.0.1, for the example.
type staticResolver struct{}

func (staticResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

func ExampleSession() {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "index")
	}))
	defer origin.Close()
	_, port, _ := net.SplitHostPort(origin.Listener.Addr().String())

	rules, _ := egress.ParseRules([]string{"mirror.test:" + port})
	s := egress.NewSession(context.Background(), egress.Policy{
		Rules:    rules,
		Resolver: staticResolver{},
		// The origin is on loopback, which only the operator can open.
		AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		MaxConns:   8,
	})
	defer s.Close()

	// The relay hands the sandbox's connections to Serve; here, a listener.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.Serve(c)
		}
	}()
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: ln.Addr().String()})}}
	for _, u := range []string{"http://mirror.test:" + port + "/", "http://elsewhere.test/"} {
		resp, err := client.Get(u)
		if err != nil {
			fmt.Println(err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, len(body) > 0)
	}
	for _, e := range s.Report() {
		fmt.Println(e.Host, e.Decision, e.Connections)
	}
	// Output:
	// 200 true
	// 403 true
	// elsewhere.test denied 0
	// mirror.test allowed 1
}

package integration

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	mobycontainer "github.com/moby/moby/api/types/container"
	"github.com/testcontainers/testcontainers-go"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/tcairlock"
)

// TestEgressFromServerContainer serves airlock from its image, as
// docker-compose.yml ships it, reaching the engine through its socket only,
// and has a run reach the test's origin through the proxy: once with the
// relay's socket directory mounted from the host at the same path (as the
// compose file does), once without, where the engine cannot see airlock's
// directory and the relay goes over an exec. The origin listens on the
// default bridge's gateway, the host as the server container reaches it;
// the server's /etc/hosts names it.
func TestEgressFromServerContainer(t *testing.T) {
	gateway := "172.17.0.1" // the default bridge's gateway: the host
	ln, err := net.Listen("tcp", gateway+":0")
	if err != nil {
		t.Fatalf("listen on the bridge's gateway: %v", err)
	}
	origin := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s\n", r.Host)
	}))
	origin.Listener = ln
	origin.Start()
	t.Cleanup(origin.Close)
	host := fmt.Sprintf("origin.test:%d", ln.Addr().(*net.TCPAddr).Port)

	for _, way := range []struct {
		name   string
		shared bool // the relay's socket directory is mounted from the host
	}{{"socket", true}, {"exec", false}} {
		t.Run(way.name, func(t *testing.T) {
			t.Parallel()
			opts := []testcontainers.ContainerCustomizer{
				tcairlock.WithConfig(map[string]any{"egress": map[string]any{"allowed": []string{host}, "allow_cidrs": []string{gateway + "/32"}}}),
				testcontainers.WithHostConfigModifier(func(hc *mobycontainer.HostConfig) {
					hc.ExtraHosts = append(hc.ExtraHosts, "origin.test:"+gateway)
				}),
				testcontainers.WithLabels(map[string]string{labelTest: "server"}),
			}
			if way.shared {
				// Short: the Unix sockets under it must fit 107 bytes.
				dir, err := os.MkdirTemp("", "ar")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.RemoveAll(dir) })
				opts = append(opts,
					testcontainers.WithEnv(map[string]string{"AIRLOCK_EGRESS_SOCKET_DIR": dir}),
					testcontainers.WithHostConfigModifier(func(hc *mobycontainer.HostConfig) {
						hc.Binds = append(hc.Binds, dir+":"+dir)
					}))
			}
			c, err := tcairlock.Run(t.Context(), opts...)
			testcontainers.CleanupContainer(t, c)
			if err != nil {
				t.Fatal(err)
			}
			cl, err := c.Client(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			res, err := cl.Run(t.Context(), api.Spec{Egress: []string{host}, Timeout: 60,
				Command: fmt.Sprintf("wget -q -O - http://%s/", host)}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != 0 || res.Stdout != "hello from "+host+"\n" || len(res.Egress) != 1 || res.Egress[0].Decision != "allowed" || res.Egress[0].Connections != 1 {
				t.Errorf("exit %d, error %q, stdout %q, stderr %q, egress %+v", res.ExitCode, res.Error, res.Stdout, res.Stderr, res.Egress)
			}
			logs, err := c.Logs(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			text, _ := io.ReadAll(logs)
			if fellBack := strings.Contains(string(text), "relays go over exec streams"); fellBack == way.shared {
				t.Errorf("the relay went over an exec: %v, want %v; the server's log:\n%s", fellBack, !way.shared, text)
			}
		})
	}
}

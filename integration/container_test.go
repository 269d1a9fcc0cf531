package integration

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	mobycontainer "github.com/moby/moby/api/types/container"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/airlock-sandbox/airlock/executor"
)

// TestCLIFromScratchImage packs the static airlock binary and its init into a
// FROM scratch image, as docker-compose ships them, and runs `airlock run` inside it against the host's
// engine through the mounted socket: the binary needs nothing from its image.
func TestCLIFromScratchImage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin, err := os.ReadFile(airlockCLI(t))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "airlock"), bin, 0o755)
	// Its init beside it, as the server image has it.
	initBin, err := os.ReadFile(os.Getenv("AIRLOCK_INIT"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "airlock-init"), initBin, 0o755)
	os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM scratch\nCOPY airlock airlock-init /\nENTRYPOINT [\"/airlock\"]\n"), 0o644)

	c, err := testcontainers.GenericContainer(t.Context(), testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			FromDockerfile: testcontainers.FromDockerfile{Context: dir},
			Cmd:            []string{"run", "--json", "--", "echo", "hi"},
			Labels:         map[string]string{executor.LabelManaged: "true", executor.LabelID: "cli-in-container"},
			HostConfigModifier: func(hc *mobycontainer.HostConfig) {
				hc.Binds = append(hc.Binds, "/var/run/docker.sock:/var/run/docker.sock")
			},
			WaitingFor: wait.ForExit(),
		},
		Started: true,
	})
	testcontainers.CleanupContainer(t, c)
	if err != nil {
		t.Fatal(err)
	}
	logs, err := c.Logs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(logs)
	state, err := c.State(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var res executor.Result
	if err := json.Unmarshal(out, &res); err != nil || state.ExitCode != 0 || res.Stdout != "hi\n" || !res.Success {
		t.Fatalf("exit %d, output:\n%s", state.ExitCode, out)
	}
	assertGone(t, res)
}

package binarytest

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/internal/testsupport/binharness"
	"github.com/pacer-dev/pacer/internal/testsupport/testkit"
)

// TestBuildInfoMetricNamesTheRelease: a binary linked with -X
// main.version (as .goreleaser.yaml and the Dockerfile link it) reports
// that version in pacer_build_info, not "dev".
func TestBuildInfoMetricNamesTheRelease(t *testing.T) {
	const release = "9.8.7-test"
	bin := filepath.Join(t.TempDir(), "pacer")
	if out, err := exec.Command("go", "build", "-ldflags", "-X main.version="+release, "-o", bin, "github.com/pacer-dev/pacer/cmd/pacer").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	url, stream, _ := setupNATS(t, 0)
	api := testapi.New(testapi.Config{Rate: 1000})
	t.Cleanup(api.Close)
	addr := binharness.FreeAddr(t)
	cfg := binharness.WriteFile(t, "run.yaml", runConfig(url, stream, api.URL(), addr, "10/s"))
	cmd := exec.Command(bin, "run", "-c", cfg)
	cmd.Dir = t.TempDir()
	var out testkit.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	want := `pacer_build_info{goversion="` + runtime.Version() + `",version="` + release + `"} 1`
	var metrics string
	binharness.Eventually(t, 30*time.Second, "/metrics", func() bool {
		code, body, err := binharness.Get(addr, "/metrics")
		metrics = body
		return err == nil && code == 200
	})
	if !strings.Contains(metrics, want) {
		t.Errorf("/metrics lacks %s; it has %q\n%s", want, grepLines(metrics, "pacer_build_info"), out.String())
	}
}

func grepLines(s, sub string) []string {
	var out []string
	for line := range strings.Lines(s) {
		if strings.Contains(line, sub) {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

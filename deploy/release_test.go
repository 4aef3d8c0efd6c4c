package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// releaseImage is the image .goreleaser.yaml publishes and the chart
// deploys by default.
const releaseImage = "ghcr.io/pacer-dev/pacer"

// chartMetadata is the part of Chart.yaml these tests read.
type chartMeta struct {
	Version    string `json:"version"`
	AppVersion string `json:"appVersion"`
}

func chartMetadata(t *testing.T) chartMeta {
	t.Helper()
	var m chartMeta
	if err := yaml.Unmarshal([]byte(readFile(chartDir+"/Chart.yaml")), &m); err != nil {
		t.Fatalf("Chart.yaml: %v", err)
	}
	return m
}

// goreleaser is the part of .goreleaser.yaml (GoReleaser v2) these tests
// check; fields it does not name are ignored.
type goreleaser struct {
	Version int `json:"version"`
	Builds  []struct {
		ID      string   `json:"id"`
		Main    string   `json:"main"`
		Binary  string   `json:"binary"`
		Env     []string `json:"env"`
		Flags   []string `json:"flags"`
		Ldflags []string `json:"ldflags"`
		Goos    []string `json:"goos"`
		Goarch  []string `json:"goarch"`
	} `json:"builds"`
	Archives []struct {
		IDs   []string `json:"ids"`
		Files []string `json:"files"`
	} `json:"archives"`
	Checksum struct {
		NameTemplate string `json:"name_template"`
		Algorithm    string `json:"algorithm"`
	} `json:"checksum"`
	Dockers []struct {
		IDs            []string `json:"ids"`
		Goos           string   `json:"goos"`
		Goarch         string   `json:"goarch"`
		Dockerfile     string   `json:"dockerfile"`
		ExtraFiles     []string `json:"extra_files"`
		ImageTemplates []string `json:"image_templates"`
		BuildFlags     []string `json:"build_flag_templates"`
	} `json:"dockers"`
	DockerManifests []struct {
		NameTemplate   string   `json:"name_template"`
		ImageTemplates []string `json:"image_templates"`
	} `json:"docker_manifests"`
}

// TestReleaseConfig checks .goreleaser.yaml without GoReleaser: one build
// of cmd/pacer, static, for Linux, macOS and Windows on amd64 and arm64,
// stamping main.version (what pacer --version prints); archives with a
// SHA-256 checksum file; images for linux/amd64 and linux/arm64 under the
// name the chart deploys, joined in one manifest per version.
func TestReleaseConfig(t *testing.T) {
	var g goreleaser
	if err := yaml.Unmarshal([]byte(readFile("../.goreleaser.yaml")), &g); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	if g.Version != 2 {
		t.Errorf("version: %d, want 2 (GoReleaser v2)", g.Version)
	}
	if len(g.Builds) != 1 {
		t.Fatalf("builds: %d, want 1", len(g.Builds))
	}
	b := g.Builds[0]
	if b.Main != "./cmd/pacer" || b.Binary != "pacer" {
		t.Errorf("build main %q binary %q, want ./cmd/pacer and pacer", b.Main, b.Binary)
	}
	if _, err := os.Stat("../cmd/pacer/main.go"); err != nil {
		t.Errorf("build main: %v", err)
	}
	if !slices.Contains(b.Env, "CGO_ENABLED=0") || !slices.Contains(b.Flags, "-trimpath") {
		t.Errorf("build env %v flags %v: want a static (CGO_ENABLED=0), -trimpath build", b.Env, b.Flags)
	}
	// The variable -X sets must exist, or the flag is silently ignored.
	if !slices.ContainsFunc(b.Ldflags, func(f string) bool { return strings.Contains(f, "-X main.version={{ .Version }}") }) {
		t.Errorf("ldflags %v do not set main.version", b.Ldflags)
	}
	if !regexp.MustCompile(`(?m)^var version = "dev"$`).MatchString(readFile("../cmd/pacer/cli.go")) {
		t.Error(`cmd/pacer has no "var version = \"dev\"" for -X main.version`)
	}
	slices.Sort(b.Goos)
	slices.Sort(b.Goarch)
	if !slices.Equal(b.Goos, []string{"darwin", "linux", "windows"}) || !slices.Equal(b.Goarch, []string{"amd64", "arm64"}) {
		t.Errorf("targets %v x %v, want darwin, linux, windows x amd64, arm64", b.Goos, b.Goarch)
	}
	if len(g.Archives) == 0 || !slices.Contains(g.Archives[0].IDs, b.ID) {
		t.Errorf("no archive of build %q", b.ID)
	}
	for _, a := range g.Archives {
		for _, f := range a.Files {
			if m, _ := filepath.Glob("../" + f); len(m) == 0 {
				t.Errorf("archive file %q matches nothing", f)
			}
		}
	}
	if g.Checksum.Algorithm != "sha256" || g.Checksum.NameTemplate == "" {
		t.Errorf("checksum %+v, want sha256 with a file name", g.Checksum)
	}

	platforms := map[string]bool{}
	for _, d := range g.Dockers {
		platforms[d.Goos+"/"+d.Goarch] = true
		if !slices.Contains(d.IDs, b.ID) {
			t.Errorf("docker %s/%s: not of build %q", d.Goos, d.Goarch, b.ID)
		}
		if d.Dockerfile != "deploy/docker/release.Dockerfile" {
			t.Errorf("docker %s/%s: dockerfile %q", d.Goos, d.Goarch, d.Dockerfile)
		}
		if !slices.Contains(d.BuildFlags, "--platform="+d.Goos+"/"+d.Goarch) {
			t.Errorf("docker %s/%s: no --platform=%s/%s", d.Goos, d.Goarch, d.Goos, d.Goarch)
		}
		if !slices.Contains(d.ExtraFiles, "configs") {
			t.Errorf("docker %s/%s: the Dockerfile copies configs/, extra_files %v", d.Goos, d.Goarch, d.ExtraFiles)
		}
		for _, img := range d.ImageTemplates {
			if !strings.HasPrefix(img, releaseImage+":") {
				t.Errorf("docker image %q is not %s, the chart's default", img, releaseImage)
			}
		}
	}
	if !platforms["linux/amd64"] || !platforms["linux/arm64"] || len(platforms) != 2 {
		t.Errorf("docker platforms %v, want linux/amd64 and linux/arm64", platforms)
	}
	var manifests []string
	for _, m := range g.DockerManifests {
		manifests = append(manifests, m.NameTemplate)
		if len(m.ImageTemplates) != 2 {
			t.Errorf("manifest %s joins %v, want the amd64 and arm64 images", m.NameTemplate, m.ImageTemplates)
		}
	}
	if !slices.Contains(manifests, releaseImage+":{{ .Version }}") {
		t.Errorf("docker manifests %v: none is %s:{{ .Version }}, the tag the chart's appVersion names", manifests, releaseImage)
	}

	// The chart deploys that image by default.
	var values struct {
		Image struct {
			Repository string `json:"repository"`
			Tag        string `json:"tag"`
		} `json:"image"`
	}
	if err := yaml.Unmarshal([]byte(readFile(chartDir+"/values.yaml")), &values); err != nil {
		t.Fatal(err)
	}
	if values.Image.Repository != releaseImage || values.Image.Tag != "" {
		t.Errorf("chart image %s:%s, want %s with the tag left to appVersion", values.Image.Repository, values.Image.Tag, releaseImage)
	}
	if v := chartMetadata(t).AppVersion; !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(v) {
		t.Errorf("Chart.yaml appVersion %q: want a release X.Y.Z (the image tag GoReleaser pushes)", v)
	}
}

// TestReleaseDockerfileIsTheDockerfile: the image GoReleaser builds is the
// Dockerfile's final stage, line for line, with GoReleaser's binary copied
// in place of the build stage's.
func TestReleaseDockerfileIsTheDockerfile(t *testing.T) {
	df := readFile("../Dockerfile")
	i := strings.LastIndex(df, "\nFROM ")
	if i < 0 {
		t.Fatal("Dockerfile: no FROM")
	}
	want := strings.Replace(df[i+1:], "COPY --from=build /out/pacer /usr/local/bin/pacer\n", "COPY pacer /usr/local/bin/pacer\n", 1)
	rel := readFile("docker/release.Dockerfile")
	j := strings.Index(rel, "\nFROM ")
	if j < 0 {
		t.Fatal("docker/release.Dockerfile: no FROM")
	}
	if got := rel[j+1:]; got != want {
		t.Errorf("docker/release.Dockerfile differs from the Dockerfile's final stage; edit both.\ngot:\n%s\nwant:\n%s", got, want)
	}
}

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readmeSetup matches the lines of "Try it" that take what the start
// banner printed: the test supplies those three values itself.
var readmeSetup = regexp.MustCompile(`^(export\s+)?(TICKETD_URL|SK|PK)=`)

// readmeTryIt returns the shell of the README's "Try it" section: its
// ```sh blocks in order, without the lines that set TICKETD_URL, SK and PK.
func readmeTryIt(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	readme := string(raw)
	start := strings.Index(readme, "\n## Try it\n")
	require.GreaterOrEqual(t, start, 0, "README has no Try it section")
	section := readme[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	var script strings.Builder
	set := map[string]bool{}
	in := false
	for _, line := range strings.Split(section, "\n") {
		switch {
		case !in && strings.TrimSpace(line) == "```sh":
			in = true
		case in && strings.TrimSpace(line) == "```":
			in = false
		case in:
			if m := readmeSetup.FindStringSubmatch(line); m != nil {
				set[m[2]] = true
				continue
			}
			script.WriteString(line + "\n")
		}
	}
	require.False(t, in, "an unclosed ```sh block in Try it")
	for _, v := range []string{"TICKETD_URL", "SK", "PK"} {
		require.Truef(t, set[v], "Try it does not set %s from the start banner", v)
	}
	return script.String()
}

// TestReadmeTryItRuns runs the README's walk-through as written against a
// real ticketd on a fresh data dir: only the URL and the two keys come from
// the start banner, through the variables the README sets. Every command
// runs under `set -euo pipefail`, and each captured id goes through
// `jq -e`, so a failed step stops the walk-through. It ends in a paid order
// and one check-in, checked here through the API.
func TestReadmeTryItRuns(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the README's walk-through needs %s", tool)
		}
	}
	script := readmeTryIt(t)
	assert.NotContains(t, script, ":8080", "commands reach the service through $TICKETD_URL")
	assert.NotContains(t, script, "localhost", "commands reach the service through $TICKETD_URL")

	// The console block reads data/admin-token: run from the data dir's parent.
	root := t.TempDir()
	p := start(t, filepath.Join(root, "data"))
	require.NotEmpty(t, p.secret)
	require.NotEmpty(t, p.publishable)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "TICKETD_URL="+p.base, "SK="+p.secret, "PK="+p.publishable)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	t.Logf("Try it, as run:\n%s", out.String())
	require.NoError(t, err, "the README's Try it failed")

	// What the walk-through did, seen through the API.
	st, events := p.call(p.secret, "GET", "/v1/events", nil)
	require.Equal(t, 200, st, events)
	data := events["data"].([]any)
	require.Len(t, data, 1)
	ev := data[0].(map[string]any)
	assert.Equal(t, "published", ev["status"])
	evt := ev["id"].(string)
	st, orders := p.call(p.secret, "GET", "/v1/events/"+evt+"/orders", nil)
	require.Equal(t, 200, st, orders)
	require.Len(t, orders["data"], 1)
	o := orders["data"].([]any)[0].(map[string]any)
	assert.Equal(t, "paid", o["status"])
	assert.EqualValues(t, 18.5, o["totalAmount"])
	st, checkins := p.call(p.secret, "GET", "/v1/events/"+evt+"/checkins", nil)
	require.Equal(t, 200, st, checkins)
	require.Len(t, checkins["data"], 1, "the walk-through ends checked in")
	c := checkins["data"].([]any)[0].(map[string]any)
	assert.Equal(t, o["registrationId"], c["registrationId"])
	assert.Equal(t, "event", c["subjectType"])
	assert.Contains(t, out.String(), `"checkedInAt"`, "the last command shows the check-in")
}

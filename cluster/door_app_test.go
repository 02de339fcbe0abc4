package cluster_test

import (
	"bufio"
	"encoding/json"
	nethttp "net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDoorThroughAnyNode: the door kit works through a node that does not
// own the event: devices made and initialized there, scans recorded, the
// passes listed, and its stream shows a check-in made through the owner.
func TestDoorThroughAnyNode(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes := startNodes(t, 3)
	u := nodes[0].NewUnit("Door")
	st, ev := do(t, "POST", nodes[1].URL+"/v1/events", u.Secret, map[string]any{"name": "Doors", "timezone": "UTC", "startsAt": "2030-06-01T09:00:00Z"})
	require.Equal(t, 201, st, "%v", ev)
	id := ev["id"].(string)
	var owner, other *node
	eventually(t, 30*time.Second, "an owner", func() bool { return ownerOf(t, nodes[0], id) != "" })
	for _, nd := range nodes {
		if nd.name == ownerOf(t, nodes[0], id) {
			owner = nd
		} else if other == nil {
			other = nd
		}
	}
	require.NotNil(t, owner)
	var regs []map[string]any
	for _, e := range []string{"a@door.io", "b@door.io"} {
		st, r := do(t, "POST", other.URL+"/v1/events/"+id+"/registrations", u.Secret, map[string]any{"email": e})
		require.Equal(t, 201, st, "%v", r)
		regs = append(regs, r)
	}
	device := func(via *node) string {
		st, d := do(t, "POST", via.URL+"/v1/events/"+id+"/devices", u.Secret, map[string]any{"name": "gate"})
		require.Equal(t, 201, st, "%v", d)
		st, k := do(t, "POST", via.URL+"/door/v1/device/initialize", "", map[string]any{"setupCode": d["setupCode"]})
		require.Equal(t, 201, st, "%v", k)
		return k["key"].(string)
	}
	keyOther, keyOwner := device(other), device(owner)

	// The stream on the node that does not own the event.
	req, _ := nethttp.NewRequest("GET", other.URL+"/door/v1/stream", nil)
	req.Header.Set("Authorization", "Bearer "+keyOther)
	resp, err := (&nethttp.Client{}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	seen := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var p struct {
					RegistrationID string `json:"registrationId"`
				}
				if json.Unmarshal([]byte(line), &p) == nil {
					seen <- p.RegistrationID
				}
			}
		}
	}()

	scan := func(via *node, key, scanID string, reg map[string]any) map[string]any {
		st, res := do(t, "POST", via.URL+"/door/v1/scans", key, map[string]any{"scans": []map[string]any{{
			"scanId": scanID, "checkinCode": reg["checkinCode"], "subjectType": "event", "scannedAt": time.Now().UTC().Format(time.RFC3339)}}})
		require.Equal(t, 200, st, "%v", res)
		return res["results"].([]any)[0].(map[string]any)
	}
	require.Equal(t, "admitted", scan(other, keyOther, "s1", regs[0])["verdict"])
	require.Equal(t, "already_checked_in", scan(owner, keyOwner, "s2", regs[0])["verdict"])
	start := time.Now()
	require.Equal(t, "admitted", scan(owner, keyOwner, "s3", regs[1])["verdict"])
	deadline := time.After(10 * time.Second)
	for got := ""; got != regs[1]["id"]; {
		select {
		case got = <-seen:
		case <-deadline:
			t.Fatal("the owner's check-in never reached the other node's stream")
		}
	}
	t.Logf("a check-in through the owner reached the other node's stream in %s", time.Since(start))

	st, page := do(t, "GET", other.URL+"/door/v1/passes", keyOther, nil)
	require.Equal(t, 200, st, "%v", page)
	require.Len(t, page["data"], 2)
	st, list := do(t, "GET", other.URL+"/v1/events/"+id+"/checkins", u.Secret, nil)
	require.Equal(t, 200, st)
	require.Len(t, list["data"], 2, "one check-in per registration, whichever node took the scan")
}

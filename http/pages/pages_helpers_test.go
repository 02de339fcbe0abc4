package pages_test

import (
	"bytes"
	"encoding/json"
	"io"
	nethttp "net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pgAPI calls the Developer API with a secret key and decodes JSON.
func pgAPI(t testing.TB, s *service, key, method, path string, body any) map[string]any {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := nethttp.NewRequest(method, s.URL+path, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := nethttp.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Less(t, res.StatusCode, 300, "%s %s: %s", method, path, raw)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out), "%s", raw)
	return out
}

// pgEvent is a published event with one open ticket type of price (in
// major units, 0 for free) and an open add-on.
type pgEvent struct {
	ID, TypeID, AddonID string
}

func pgPublished(t testing.TB, s *service, key string, price float64) pgEvent {
	t.Helper()
	ev := pgAPI(t, s, key, "POST", "/v1/events", map[string]any{
		"name": "Gophers Summit", "timezone": "Europe/Berlin", "startsAt": time.Now().Add(30 * 24 * time.Hour).UTC().Format(time.RFC3339), "currency": "EUR",
	})
	id := ev["id"].(string)
	tt := pgAPI(t, s, key, "POST", "/v1/events/"+id+"/ticket-types", map[string]any{"name": "General admission", "capacity": 50, "priceAmount": price})
	pgAPI(t, s, key, "PATCH", "/v1/events/"+id+"/ticket-types/"+tt["id"].(string), map[string]any{"status": "open"})
	ao := pgAPI(t, s, key, "POST", "/v1/events/"+id+"/addons", map[string]any{"name": "Conference T-shirt", "priceAmount": 15, "capacity": 100})
	pgAPI(t, s, key, "PATCH", "/v1/events/"+id+"/addons/"+ao["id"].(string), map[string]any{"status": "open"})
	pgAPI(t, s, key, "PATCH", "/v1/events/"+id, map[string]any{"status": "published"})
	return pgEvent{ID: id, TypeID: tt["id"].(string), AddonID: ao["id"].(string)}
}

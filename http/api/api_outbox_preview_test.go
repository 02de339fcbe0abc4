package api_test

import (
	"bytes"
	"context"
	"mime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ticketd/internal/adminctl"
)

// Without SMTP the ticket email waits in the outbox; the operator reads it
// rendered, as JSON and as the raw message, and nothing is sent or
// charged by looking.
func TestAPIOutboxPreview(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)
	u := f.unit(t)
	adm := f.admin(t)
	ev := apiPublished(t, u.dev)
	tt := apiOpenType(t, u.dev, ev, map[string]any{"name": "Standing"})
	reg := apiRegister(t, u.dev, ev, tt, "ada@example.com")

	items := apiData(t, apiWant(t, adm.Do("GET", "/admin/v1/outbox", nil), 200))
	require.Len(t, items, 1)
	require.Equal(t, "ticket", items[0]["kind"])
	require.Nil(t, items[0]["orderNumber"])
	id := apiS(items[0], "id")

	p := apiWant(t, adm.Do("GET", "/admin/v1/outbox/"+id+"/preview", nil), 200)
	require.Equal(t, id, apiS(apiM(p, "mail"), "id"))
	require.Equal(t, "pending", apiS(apiM(p, "mail"), "status"))
	h := apiM(p, "headers")
	require.Equal(t, "<ada@example.com>", h["to"])
	require.Equal(t, "Your ticket: Gophercon", h["subject"])
	require.True(t, strings.HasPrefix(apiS(h, "contentType"), "multipart/mixed"), h["contentType"])
	require.Contains(t, p["text"], apiS(reg, "passUrl"))
	require.Contains(t, p["text"], "Standing")
	require.Contains(t, p["html"], "Open your entry pass")
	files := apiData(t, map[string]any{"data": p["attachments"]})
	require.Len(t, files, 1)
	require.Equal(t, "event.ics", files[0]["filename"])
	require.True(t, strings.HasPrefix(apiS(files[0], "contentType"), "text/calendar; method=PUBLISH; charset=UTF-8"))
	require.Greater(t, files[0]["size"], 100.0)

	resp, body := apiRaw(t, "GET", f.s.URL+"/admin/v1/outbox/"+id+"/preview?format=eml",
		map[string]string{"Authorization": "Bearer " + f.s.Admin}, nil)
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "message/rfc822", resp.Header.Get("Content-Type"))
	m := apiReadMail(t, body)
	require.Equal(t, "Your ticket: Gophercon", m.subject)
	require.Contains(t, m.text, apiS(reg, "passUrl"))
	require.Len(t, m.files, 1)
	ct, _, err := mime.ParseMediaType(m.files[0].contentType)
	require.NoError(t, err)
	require.Equal(t, "text/calendar", ct)
	require.Contains(t, unfoldICS(m.files[0].body), "DTSTART;TZID=Europe/Berlin:20300601T110000")

	// The operator's command line asks the same route.
	var out, errOut bytes.Buffer
	noEnv := func(string) (string, bool) { return "", false }
	code := adminctl.Run(context.Background(), []string{"outbox", "preview", id, "-url", f.s.URL, "-token", f.s.Admin}, noEnv, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	require.Contains(t, out.String(), `"subject": "Your ticket: Gophercon"`)
	require.Contains(t, out.String(), `"filename": "event.ics"`)
	out.Reset()
	code = adminctl.Run(context.Background(), []string{"outbox", "preview", "-eml", "mail/" + strings.ReplaceAll(id, ".", "/"),
		"-url", f.s.URL, "-token", f.s.Admin}, noEnv, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	require.Equal(t, "Your ticket: Gophercon", apiReadMail(t, out.Bytes()).subject)
	out.Reset()
	code = adminctl.Run(context.Background(), []string{"outbox", "preview", "evt_nope.0000000000000001-0000", "-url", f.s.URL,
		"-token", f.s.Admin}, noEnv, &out, &errOut)
	require.Equal(t, 1, code)
	require.Contains(t, out.String(), "NOT_FOUND")

	// Looking changed nothing: the entry is still pending, never tried.
	items = apiData(t, apiWant(t, adm.Do("GET", "/admin/v1/outbox", nil), 200))
	require.Len(t, items, 1)
	require.Equal(t, "pending", items[0]["status"])
	require.EqualValues(t, 0, items[0]["attempts"])

	apiWantErr(t, adm.Do("GET", "/admin/v1/outbox/evt_nope.0000000000000001-0000/preview", nil), 404, "NOT_FOUND")

	// An entry that cannot be rendered (here: of a kind this build does not
	// know) is the one an operator most needs to see: 412 saying why.
	b := f.s.Sys.Store().NewBatch()
	b.Put([]byte("mail/"+ev+"/00000000000000ff-0000"), []byte(`{"kind":"postcard","email":"ada@example.com"}`))
	require.NoError(t, f.s.Sys.Store().Commit(b))
	b.Close()
	e := apiWantErr(t, adm.Do("GET", "/admin/v1/outbox/"+ev+".00000000000000ff-0000/preview", nil), 412, "FAILED_PRECONDITION")
	require.Equal(t, "OUTBOX_MAIL_UNRENDERABLE", e["reason"])
	require.Contains(t, e["message"], `unknown outbox kind "postcard"`)
	apiWant400(t, adm.AllowInvalidRequest().Do("GET", "/admin/v1/outbox/"+id+"/preview?format=pdf", nil), "format")
	apiWantErr(t, u.dev.Do("GET", "/admin/v1/outbox/"+id+"/preview", nil), 401, "UNAUTHENTICATED")
}

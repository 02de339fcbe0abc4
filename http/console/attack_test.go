package console_test

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	nethttp "net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/app"
	"ticketd/app/apptest"
	"ticketd/audit"
	"ticketd/http/console"
)

// clock is a settable console clock: it stands at the time it was made
// and moves only when the test advances it, so a wait the console
// answers does not shrink while a slow machine hashes a password.
type clock struct {
	at  time.Time
	off atomic.Int64
}

func newClock() *clock                   { return &clock{at: time.Now()} }
func (c *clock) Now() time.Time          { return c.at.Add(time.Duration(c.off.Load())) }
func (c *clock) Advance(d time.Duration) { c.off.Add(int64(d)) }

// fromAddr is a console browser whose connections leave from loopback
// address ip (127.0.0.x): the service sees each as its own client.
func fromAddr(t *testing.T, ip string) *apptest.Browser {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	tr := &nethttp.Transport{DialContext: func(ctx context.Context, n, a string) (net.Conn, error) { return d.DialContext(ctx, n, a) },
		DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	return apptest.NewBrowserWith(t, &nethttp.Client{Jar: jar, Transport: tr, Timeout: 60 * time.Second,
		CheckRedirect: func(*nethttp.Request, []*nethttp.Request) error { return nethttp.ErrUseLastResponse }})
}

var resetRE = regexp.MustCompile(`/members/(mem_[A-Za-z0-9]+)/reset`)

// memberID finds the id of the member named name on a unit page.
func memberID(t *testing.T, body, name string) string {
	t.Helper()
	return match(t, regexp.MustCompile(`(?s)<strong>`+regexp.QuoteMeta(name)+`</strong>.*?/members/(mem_[A-Za-z0-9]+)/role`), body)
}

// useReset sets a new password through reset link in a fresh browser;
// it answers the final status.
func useReset(t *testing.T, link, password string) int {
	t.Helper()
	b := apptest.NewBrowser(t)
	p := b.Get(link)
	if p.Status != 200 {
		return p.Status
	}
	p = b.Post(link, url.Values{"csrf": {match(t, csrfRE, p.Body)}, "password": {password}, "password2": {password}})
	return p.Status
}

// TestResetLinksAcrossUnits: Sam is a member of units A and B. Alice owns
// A alone and may not make Sam's reset link (it would open B to her);
// Bob owns both and may, and so may the operator. One link lives per
// member (a newer one ends the older); a link ends on use, on revocation
// (the unit page lists open links with a Revoke button) and when its
// maker stops being an owner.
func TestResetLinksAcrossUnits(t *testing.T) {
	s := apptest.Start(t)
	op := operator(t, s)
	unitA, unitB := op.newUnit("Unit A"), op.newUnit("Unit B")
	alice := accept(t, op.invite(unitA, "alice@example.com", "owner"), "Alice", "alice password")
	bob := accept(t, op.invite(unitA, "bob@example.com", "owner"), "Bob", "bob password 1")
	// Bob joins B with the same account (an existing member's password).
	link := op.invite(unitB, "bob@example.com", "owner")
	b := apptest.NewBrowser(t)
	p := b.Get(link)
	require.Equal(t, 200, p.Status)
	require.Equal(t, 303, b.Post(link, url.Values{"csrf": {match(t, csrfRE, p.Body)}, "password": {"bob password 1"}}).Status)
	accept(t, op.invite(unitA, "sam@example.com", "viewer"), "Sam", "sam password 1")
	link = op.invite(unitB, "sam@example.com", "admin")
	b = apptest.NewBrowser(t)
	p = b.Get(link)
	require.Equal(t, 303, b.Post(link, url.Values{"csrf": {match(t, csrfRE, p.Body)}, "password": {"sam password 1"}}).Status)

	page := alice.get("/console/units/" + unitA)
	sam := memberID(t, page.Body, "Sam")
	assert.NotContains(t, page.Body, "/members/"+sam+"/reset", "Alice is not offered Sam's reset")
	p = alice.post("/console/units/" + unitA + "/members/" + sam + "/reset")
	assert.Equal(t, 403, p.Status)
	assert.Contains(t, p.Body, "Only the operator, or an owner of every business unit this member belongs to, can reset their password")
	assert.NotRegexp(t, linkRE, p.Body)
	assert.NotContains(t, p.Body, "id=\"open-links\"", "no link was made")

	// Bob (owner of A and B) may; then the operator's newer link ends his.
	assert.Contains(t, bob.get("/console/units/"+unitA).Body, "/members/"+sam+"/reset")
	p = bob.post("/console/units/" + unitA + "/members/" + sam + "/reset")
	require.Equal(t, 200, p.Status, p.Body)
	bobLink := match(t, linkRE, p.Body)
	op.get("/console/units/" + unitB)
	p = op.post("/console/units/" + unitB + "/members/" + sam + "/reset")
	require.Equal(t, 200, p.Status, p.Body)
	opLink := match(t, linkRE, p.Body)
	assert.Equal(t, 404, apptest.NewBrowser(t).Get(bobLink).Status, "a newer link ends the older one")

	// The owners of A see the open link and revoke it.
	page = alice.get("/console/units/" + unitA)
	assert.Contains(t, page.Body, `id="open-links"`)
	assert.Contains(t, page.Body, "Password reset")
	linkID := match(t, regexp.MustCompile(`/links/(inv_[A-Za-z0-9]+)/revoke`), page.Body)
	p = alice.post("/console/units/" + unitA + "/links/" + linkID + "/revoke")
	require.Equal(t, 303, p.Status, p.Body)
	page = alice.get("/console/units/" + unitA)
	assert.Contains(t, page.Body, "The password reset link of sam@example.com no longer works.", "the confirmation shows once")
	assert.NotContains(t, alice.get("/console/units/"+unitA).Body, "no longer works.", "and only once")
	assert.Equal(t, 404, useReset(t, opLink, "sam password 2"), "a revoked link ends")

	// Used once: it ends; the member's old sessions end with the password.
	p = bob.post("/console/units/" + unitA + "/members/" + sam + "/reset")
	require.Equal(t, 200, p.Status)
	used := match(t, linkRE, p.Body)
	assert.Equal(t, 303, useReset(t, used, "sam password 2"))
	assert.Equal(t, 404, useReset(t, used, "sam password 3"), "a used link ends")
	_, p = signIn(t, s, "sam@example.com", "sam password 2")
	assert.Equal(t, 303, p.Status)

	// The maker stops being an owner of A: the links Bob made end.
	bob.get("/console/units/" + unitA)
	p = bob.post("/console/units/" + unitA + "/members/" + sam + "/reset")
	require.Equal(t, 200, p.Status)
	makerLink := match(t, linkRE, p.Body)
	inviteLink := bob.invite(unitA, "newbie@example.com", "viewer")
	bobID := memberID(t, op.get("/console/units/"+unitA).Body, "Bob")
	require.Equal(t, 303, op.post("/console/units/"+unitA+"/members/"+bobID+"/role", "role", "admin").Status)
	assert.Equal(t, 404, useReset(t, makerLink, "sam password 4"), "the maker's reset link ended with their role")
	assert.Equal(t, 404, apptest.NewBrowser(t).Get(inviteLink).Status, "and their invitation")

	// The audit log has the revocation by Alice.
	require.NoError(t, s.Main.Audit().Flush())
	entries, _, err := s.Main.Audit().List(unitA, audit.Filter{OperationID: "console.revokeLink"}, "", 10)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Contains(t, string(entries[0].After), `"ended":"revoked"`)
}

// TestSignInFloodFromManyAddresses: failed sign-ins with random emails
// from 120 loopback addresses overflow the throttle's table (tuned to 60
// keys) while a member and the operator sign in from another address:
// both get in, during the flood and after it. The table is bounded by
// eviction, never by refusing newcomers. One address that keeps failing
// is slowed down, not the others.
func TestSignInFloodFromManyAddresses(t *testing.T) {
	s := apptest.Start(t, func(c *app.Config) {
		c.Tune = &app.Tuning{Console: func(cc *console.Config) { cc.SignInKeys = 60 }}
	})
	op := operator(t, s)
	unit := op.newUnit("Flooded")
	accept(t, op.invite(unit, "real@example.com", "owner"), "Real", "real password")

	const addrs, each, workers = 120, 3, 6
	var refused, done atomic.Int64
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				b := fromAddr(t, fmt.Sprintf("127.0.0.%d", 2+i))
				for j := 0; j < each; j++ {
					p := b.Get(s.URL + "/console/login")
					c := csrfRE.FindStringSubmatch(p.Body)
					if c == nil {
						refused.Add(1)
						continue
					}
					p = b.Post(s.URL+"/console/login", url.Values{"csrf": {c[1]},
						"email": {fmt.Sprintf("nobody-%d-%d@example.com", i, j)}, "password": {"guess guess"}})
					if p.Status != 401 {
						refused.Add(1)
					}
					done.Add(1)
				}
			}
		}()
	}
	go func() {
		for i := 0; i < addrs; i++ {
			jobs <- i
		}
		close(jobs)
	}()
	// During the flood.
	deadline := time.Now().Add(2 * time.Minute)
	for done.Load() < addrs*each/2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	_, p := signIn(t, s, "real@example.com", "real password")
	assert.Equal(t, 303, p.Status, "a member signs in during the flood")
	_, p = signIn(t, s, "", s.Admin)
	assert.Equal(t, 303, p.Status, "the operator signs in during the flood")
	wg.Wait()
	assert.Zero(t, refused.Load(), "every flood try was a plain 401: nobody refused for a full table")
	assert.Equal(t, int64(addrs*each), done.Load())
	_, p = signIn(t, s, "real@example.com", "real password")
	assert.Equal(t, 303, p.Status, "a member signs in after the flood")
	_, p = signIn(t, s, "", s.Admin)
	assert.Equal(t, 303, p.Status, "the operator signs in after the flood")

	// One address failing past its free tries (20) waits; another does not.
	noisy := fromAddr(t, "127.0.0.250")
	var last apptest.Page
	for i := 0; i < 22; i++ {
		p := noisy.Get(s.URL + "/console/login")
		last = noisy.Post(s.URL+"/console/login", url.Values{"csrf": {match(t, csrfRE, p.Body)},
			"email": {fmt.Sprintf("spray-%d@example.com", i)}, "password": {"guess guess"}})
		if last.Status == 429 {
			break
		}
	}
	assert.Equal(t, 429, last.Status, "the spraying address is slowed down")
	assert.Contains(t, last.Body, "Too many failed sign-ins. Wait")
	quiet := fromAddr(t, "127.0.0.251")
	p = quiet.Get(s.URL + "/console/login")
	p = quiet.Post(s.URL+"/console/login", url.Values{"csrf": {match(t, csrfRE, p.Body)}, "email": {"real@example.com"}, "password": {"real password"}})
	assert.Equal(t, 303, p.Status, "another address is not")
}

// TestLongEmailsDoNotGrowTheAuditLog: sign-ins with 1 MB emails are
// refused before they are looked up; their audit entries keep 100 bytes
// of the email; the data directory and the sign-ins page stay small.
func TestLongEmailsDoNotGrowTheAuditLog(t *testing.T) {
	s := apptest.Start(t)
	op := operator(t, s)
	require.NoError(t, s.Main.Audit().Flush())
	before := dirSize(t, s.Config.DataDir)
	huge := strings.Repeat("x", 1_000_000) + "@example.com"
	const tries = 20
	for i := 0; i < tries; i++ {
		b := fromAddr(t, fmt.Sprintf("127.0.1.%d", 1+i))
		p := b.Get(s.URL + "/console/login")
		p = b.Post(s.URL+"/console/login", url.Values{"csrf": {match(t, csrfRE, p.Body)}, "email": {huge}, "password": {"whatever pw"}})
		require.Equal(t, 400, p.Status)
		assert.Contains(t, p.Body, "An email address has at most 320 characters.")
		assert.Less(t, len(p.Body), 20_000, "the page echoes at most 320 characters of it")
	}
	require.NoError(t, s.Main.Audit().Flush())
	entries, _, err := s.Main.Audit().List(console.SignInUnit, audit.Filter{OperationID: "console.signInFailed"}, "", 50)
	require.NoError(t, err)
	require.Len(t, entries, tries)
	for _, e := range entries {
		assert.Less(t, len(e.After), 200, "an entry keeps a capped email")
	}
	grown := dirSize(t, s.Config.DataDir) - before
	assert.Less(t, grown, int64(2<<20), "20 MB typed, the data directory grew %d bytes", grown)
	p := op.get("/console/sign-ins")
	require.Equal(t, 200, p.Status)
	assert.Less(t, len(p.Body), 200_000, "the sign-ins page stays small")
}

func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a file compacted away mid-walk
		}
		if i, err := d.Info(); err == nil && !d.IsDir() {
			n += i.Size()
		}
		return nil
	}))
	return n
}

// TestSessionFloodKeepsLiveSessions: four accounts sign in again and again
// from many addresses, far past the session table's bound (tuned to 12,
// 4 per person): the live member's and the operator's sessions stay;
// each flooding account keeps only its newest sessions.
func TestSessionFloodKeepsLiveSessions(t *testing.T) {
	s := apptest.Start(t, func(c *app.Config) {
		c.Tune = &app.Tuning{Console: func(cc *console.Config) { cc.Sessions, cc.SessionsPerPerson = 12, 4 }}
	})
	op := operator(t, s)
	unit := op.newUnit("Sessions")
	live := accept(t, op.invite(unit, "live@example.com", "owner"), "Live", "live password")
	for i := 0; i < 4; i++ {
		accept(t, op.invite(unit, fmt.Sprintf("flood%d@example.com", i), "viewer"), "Flood", "flood password")
	}
	var floods []*member
	for round := 0; round < 8; round++ {
		for i := 0; i < 4; i++ {
			b := fromAddr(t, fmt.Sprintf("127.0.2.%d", 1+round*4+i))
			m, p := signInWith(t, b, s, fmt.Sprintf("flood%d@example.com", i), "flood password")
			require.Equal(t, 303, p.Status, p.Body)
			floods = append(floods, m)
		}
		// The live member and the operator keep using the console.
		require.Equal(t, 200, live.get("/console").Status, "round %d", round)
		require.Equal(t, 200, op.get("/console").Status, "round %d", round)
	}
	alive := 0
	for i, m := range floods {
		if m.b.Get(s.URL+"/console").Status == 200 {
			alive++
			assert.GreaterOrEqual(t, i, len(floods)-16, "only the newest flood sessions live")
		}
	}
	assert.LessOrEqual(t, alive, 10, "the flood holds what is left of the table")
	assert.Equal(t, 200, live.get("/console").Status)
}

// TestFormsRefuseControlCharacters: a unit name with a NUL byte is
// refused next to its field with what was typed kept; any other console
// form holding one is refused whole; nothing of it is stored.
func TestFormsRefuseControlCharacters(t *testing.T) {
	s := apptest.Start(t)
	op := operator(t, s)
	p := op.post("/console/units", "name", "Evil\x00Unit")
	assert.Equal(t, 400, p.Status)
	assert.Contains(t, p.Body, "The name must not hold control characters (such as a NUL byte or a tab).")
	p = op.post("/console/units", "name", strings.Repeat("u", 201))
	assert.Equal(t, 400, p.Status)
	assert.Contains(t, p.Body, "The name must be at most 200 characters.")
	unit := op.newUnit("Clean Unit")
	op.get("/console/units/" + unit)
	p = op.post("/console/units/"+unit+"/events", "name", "Gala\x00", "timezone", "UTC", "currency", "EUR")
	assert.Equal(t, 400, p.Status)
	assert.Contains(t, p.Body, "holds a control character")
	assert.NotContains(t, op.get("/console/units/"+unit).Body, "Gala", "nothing stored")
	for _, u := range s.Sys.Directory().Units() {
		assert.NotContains(t, u.Name, "\x00")
	}
}

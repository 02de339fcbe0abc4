package ticketpdf_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/ticketpdf"
)

func sample() ticketpdf.Ticket {
	start := time.Date(2026, 12, 5, 18, 30, 0, 0, time.UTC)
	end := start.Add(4 * time.Hour)
	return ticketpdf.Ticket{EventName: "Winter Jazz Night", Attendee: "Zoë Müller", Email: "zoe@example.com",
		TicketType: "Standing", StartsAt: &start, EndsAt: &end, Timezone: "Europe/Berlin",
		Venue: "Kulturbrauerei", Address: "Schönhauser Allee 36, 10435 Berlin", CheckinCode: "K7QF-M2XD-93PA"}
}

// TestRenderReadBack renders a ticket and reads it back with the tools a
// person's machine has: pdftotext finds every field (times in the event's
// zone), pdftoppm renders the page at 150 dpi and zbarimg decodes the QR
// code to the check-in code.
func TestRenderReadBack(t *testing.T) {
	for _, tool := range []string{"pdftotext", "pdftoppm", "zbarimg", "pdfinfo"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s missing: make ticket-deps installs poppler-utils and zbar-tools", tool)
		}
	}
	tk := sample()
	var buf bytes.Buffer
	require.NoError(t, ticketpdf.Render(&buf, tk))
	dir := t.TempDir()
	pdf := filepath.Join(dir, "ticket.pdf")
	require.NoError(t, os.WriteFile(pdf, buf.Bytes(), 0o600))

	info, err := exec.Command("pdfinfo", pdf).CombinedOutput()
	require.NoError(t, err, "%s", info)
	assert.Regexp(t, `Pages:\s+1\n`, string(info), "one page")

	txt, err := exec.Command("pdftotext", "-layout", pdf, "-").CombinedOutput()
	require.NoError(t, err, "%s", txt)
	text := string(txt)
	for _, want := range []string{"Winter Jazz Night", "Zoë Müller", "zoe@example.com", "Standing",
		"Saturday 5 December 2026, 19:30 - 23:30 CET (Europe/Berlin)", "Kulturbrauerei, Schönhauser Allee 36, 10435 Berlin",
		"K7QF-M2XD-93PA"} {
		assert.Contains(t, text, want)
	}

	out, err := exec.Command("pdftoppm", "-r", "150", "-png", "-singlefile", pdf, filepath.Join(dir, "page")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	code, err := exec.Command("zbarimg", "--quiet", "--raw", "-Sdisable", "-Sqrcode.enable", filepath.Join(dir, "page.png")).Output()
	require.NoError(t, err, "zbarimg found no QR code on the rendered page")
	assert.Equal(t, tk.CheckinCode, strings.TrimSpace(string(code)))
}

func TestRenderRefusesNoCode(t *testing.T) {
	tk := sample()
	tk.CheckinCode = " "
	assert.ErrorIs(t, ticketpdf.Render(&bytes.Buffer{}, tk), ticketpdf.ErrNoCode)
}

func TestTransliterate(t *testing.T) {
	assert.Equal(t, "Caf\xe9 \x80 ?? ok", ticketpdf.Transliterate("Café € 音乐 ok"))
}

func TestWhenWithoutZoneOrEnd(t *testing.T) {
	s := time.Date(2026, 1, 2, 9, 0, 0, 0, time.UTC)
	assert.Equal(t, "Friday 2 January 2026, 09:00 UTC", ticketpdf.Ticket{StartsAt: &s}.When())
	assert.Equal(t, "", ticketpdf.Ticket{}.When())
}

// BenchmarkRender is the PDF's service time per request (one render, as
// the pass page's ticket.pdf does on each request).
func BenchmarkRender(b *testing.B) {
	tk := sample()
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := ticketpdf.Render(&buf, tk); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len()), "bytes/pdf")
}

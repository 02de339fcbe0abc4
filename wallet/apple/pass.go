package apple

import (
	"archive/zip"
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"sort"
	"time"

	"github.com/smallstep/pkcs7"
)

// ContentType is the media type of a .pkpass.
const ContentType = "application/vnd.apple.pkpass"

// Pass is what a pass shows. Serial identifies it for its whole life
// (Wallet keeps one pass per pass type and serial); AuthToken
// authenticates the device's calls about it (AuthToken below).
type Pass struct {
	Serial    string
	AuthToken string
	EventName string
	// StartsAt is shown in Timezone (an IANA name), as the event's own
	// clock says it, wherever the phone is.
	StartsAt    *time.Time
	Timezone    string
	Venue       string
	Address     string
	Attendee    string
	TicketType  string
	CheckinCode string
	// PassURL is the pass page, on the pass's back.
	PassURL string
	// Voided: the registration no longer admits (cancelled, or this pass
	// was replaced by a rotated one). Wallet shows it as void.
	Voided bool
}

// passJSON is pass.json (Apple's Wallet Pass reference); only what an
// event ticket uses.
type passJSON struct {
	FormatVersion       int       `json:"formatVersion"`
	PassTypeIdentifier  string    `json:"passTypeIdentifier"`
	SerialNumber        string    `json:"serialNumber"`
	TeamIdentifier      string    `json:"teamIdentifier"`
	OrganizationName    string    `json:"organizationName"`
	Description         string    `json:"description"`
	WebServiceURL       string    `json:"webServiceURL,omitempty"`
	AuthenticationToken string    `json:"authenticationToken,omitempty"`
	RelevantDate        string    `json:"relevantDate,omitempty"`
	Voided              bool      `json:"voided,omitempty"`
	ForegroundColor     string    `json:"foregroundColor"`
	BackgroundColor     string    `json:"backgroundColor"`
	LabelColor          string    `json:"labelColor"`
	Barcodes            []barcode `json:"barcodes"`
	// Barcode is the pre-iOS 9 key, kept for old devices.
	Barcode     barcode   `json:"barcode"`
	EventTicket structure `json:"eventTicket"`
}

type barcode struct {
	Format          string `json:"format"`
	Message         string `json:"message"`
	MessageEncoding string `json:"messageEncoding"`
	AltText         string `json:"altText,omitempty"`
}

type structure struct {
	PrimaryFields   []field `json:"primaryFields"`
	SecondaryFields []field `json:"secondaryFields,omitempty"`
	AuxiliaryFields []field `json:"auxiliaryFields,omitempty"`
	BackFields      []field `json:"backFields,omitempty"`
}

type field struct {
	Key             string `json:"key"`
	Label           string `json:"label,omitempty"`
	Value           string `json:"value"`
	DateStyle       string `json:"dateStyle,omitempty"`
	TimeStyle       string `json:"timeStyle,omitempty"`
	IgnoresTimeZone bool   `json:"ignoresTimeZone,omitempty"`
}

// PassJSON is p's pass.json.
func (s *Signer) PassJSON(p Pass) ([]byte, error) {
	if p.Serial == "" || p.CheckinCode == "" {
		return nil, fmt.Errorf("apple wallet: pass without serial or check-in code")
	}
	if len(p.AuthToken) < 16 {
		return nil, fmt.Errorf("apple wallet: authentication token shorter than 16 characters")
	}
	bc := barcode{Format: "PKBarcodeFormatQR", Message: p.CheckinCode, MessageEncoding: "iso-8859-1", AltText: p.CheckinCode}
	j := passJSON{FormatVersion: 1, PassTypeIdentifier: s.cfg.PassTypeID, SerialNumber: p.Serial, TeamIdentifier: s.cfg.TeamID,
		OrganizationName: s.cfg.OrganizationName, Description: "Ticket: " + p.EventName,
		WebServiceURL: s.cfg.WebServiceURL, AuthenticationToken: p.AuthToken, Voided: p.Voided,
		ForegroundColor: "rgb(255, 255, 255)", BackgroundColor: "rgb(23, 71, 181)", LabelColor: "rgb(214, 224, 255)",
		Barcodes: []barcode{bc}, Barcode: bc}
	if s.cfg.WebServiceURL == "" {
		j.AuthenticationToken = ""
	}
	t := structure{PrimaryFields: []field{{Key: "event", Label: "EVENT", Value: p.EventName}}}
	if p.StartsAt != nil {
		loc, err := time.LoadLocation(p.Timezone)
		if err != nil {
			loc = time.UTC
		}
		at := p.StartsAt.In(loc).Format(time.RFC3339)
		j.RelevantDate = at
		// ignoresTimeZone: the event's wall clock, not the phone's zone.
		t.SecondaryFields = append(t.SecondaryFields, field{Key: "date", Label: "DATE", Value: at,
			DateStyle: "PKDateStyleMedium", TimeStyle: "PKDateStyleShort", IgnoresTimeZone: true})
	}
	if p.Venue != "" {
		t.SecondaryFields = append(t.SecondaryFields, field{Key: "venue", Label: "VENUE", Value: p.Venue})
	}
	if p.Attendee != "" {
		t.AuxiliaryFields = append(t.AuxiliaryFields, field{Key: "attendee", Label: "ATTENDEE", Value: p.Attendee})
	}
	if p.TicketType != "" {
		t.AuxiliaryFields = append(t.AuxiliaryFields, field{Key: "ticket", Label: "TICKET", Value: p.TicketType})
	}
	if p.Address != "" {
		t.BackFields = append(t.BackFields, field{Key: "address", Label: "Address", Value: p.Address})
	}
	t.BackFields = append(t.BackFields, field{Key: "code", Label: "Check-in code", Value: p.CheckinCode})
	if p.PassURL != "" {
		t.BackFields = append(t.BackFields, field{Key: "pass", Label: "Entry pass", Value: p.PassURL})
	}
	if p.Voided {
		t.BackFields = append(t.BackFields, field{Key: "status", Label: "Status", Value: "This pass no longer admits."})
	}
	j.EventTicket = t
	return json.MarshalIndent(j, "", "  ")
}

// Build is p's signed .pkpass, signed at now.
func (s *Signer) Build(p Pass) ([]byte, error) {
	pj, err := s.PassJSON(p)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{"pass.json": pj, "icon.png": icon1x, "icon@2x.png": icon2x}
	manifest := map[string]string{}
	for name, b := range files {
		sum := sha1.Sum(b)
		manifest[name] = hex.EncodeToString(sum[:])
	}
	mj, err := json.Marshal(manifest)
	if err != nil {
		return nil, fmt.Errorf("apple wallet: manifest: %w", err)
	}
	sig, err := s.sign(mj)
	if err != nil {
		return nil, err
	}
	files["manifest.json"], files["signature"] = mj, sig
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, n := range names {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: n, Method: zip.Deflate, Modified: time.Unix(0, 0).UTC()})
		if err != nil {
			return nil, fmt.Errorf("apple wallet: zip: %w", err)
		}
		if _, err := w.Write(files[n]); err != nil {
			return nil, fmt.Errorf("apple wallet: zip: %w", err)
		}
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("apple wallet: zip: %w", err)
	}
	return buf.Bytes(), nil
}

// sign is the detached PKCS#7 signature of manifest, SHA-256, with the
// WWDR certificate in the chain.
func (s *Signer) sign(manifest []byte) ([]byte, error) {
	sd, err := pkcs7.NewSignedData(manifest)
	if err != nil {
		return nil, fmt.Errorf("apple wallet: signature: %w", err)
	}
	sd.SetDigestAlgorithm(pkcs7.OIDDigestAlgorithmSHA256)
	if err := sd.AddSignerChain(s.cert, s.key, []*x509.Certificate{s.wwdr}, pkcs7.SignerInfoConfig{}); err != nil {
		return nil, fmt.Errorf("apple wallet: signature: %w", err)
	}
	sd.Detach()
	der, err := sd.Finish()
	if err != nil {
		return nil, fmt.Errorf("apple wallet: signature: %w", err)
	}
	return der, nil
}

// AuthToken is the authenticationToken of the pass serial: an HMAC of it
// under secret, so the service checks a device's token without storing
// one. 32 hex characters (Apple asks at least 16).
func AuthToken(secret []byte, serial string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("apple-pass\x00" + serial))
	return hex.EncodeToString(m.Sum(nil))[:32]
}

// CheckAuth reports whether header (the Authorization of a web service
// call) carries serial's token.
func CheckAuth(secret []byte, serial, header string) bool {
	const scheme = "ApplePass "
	if len(header) <= len(scheme) || header[:len(scheme)] != scheme {
		return false
	}
	return hmac.Equal([]byte(header[len(scheme):]), []byte(AuthToken(secret, serial)))
}

// The icons: a ticket-blue rounded square, drawn once.
var icon1x, icon2x = drawIcon(29), drawIcon(58)

func drawIcon(side int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, side, side))
	blue := color.NRGBA{23, 71, 181, 255}
	white := color.NRGBA{255, 255, 255, 255}
	r := side / 5
	for y := 0; y < side; y++ {
		for x := 0; x < side; x++ {
			dx, dy := max(r-x, x-(side-1-r), 0), max(r-y, y-(side-1-r), 0)
			if dx*dx+dy*dy > r*r {
				continue // outside the rounded corner
			}
			c := blue
			// A notch line across the middle: a ticket stub.
			if y == side/2 && x > side/6 && x < side-side/6 && (x/2)%2 == 0 {
				c = white
			}
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(fmt.Sprintf("apple wallet: draw icon: %v", err))
	}
	return buf.Bytes()
}

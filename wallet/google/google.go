package google

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// SaveBase is the address a Save link's JWT is appended to.
const SaveBase = "https://pay.google.com/gp/v/save/"

// ErrConfig: the Google Wallet configuration cannot sign links.
var ErrConfig = errors.New("google wallet")

// Key is a service account's JSON key, as Google Cloud's console
// downloads it.
type Key struct {
	Type         string `json:"type"`
	ClientEmail  string `json:"client_email"`
	PrivateKeyID string `json:"private_key_id"`
	PrivateKey   string `json:"private_key"`
	TokenURI     string `json:"token_uri"`
	rsa          *rsa.PrivateKey
}

// Issuer signs Save links of one Wallet issuer account.
type Issuer struct {
	id      string
	key     Key
	origins []string
	now     func() time.Time
}

// Load reads the service account key at keyFile for issuerID; origins
// are the web origins allowed to show the Save button (the service's base
// URL).
func Load(issuerID, keyFile string, origins []string) (*Issuer, error) {
	if strings.TrimSpace(issuerID) == "" || strings.TrimSpace(keyFile) == "" {
		return nil, fmt.Errorf("%w: TICKETD_GOOGLE_WALLET_ISSUER_ID and TICKETD_GOOGLE_WALLET_KEY must both be set (or neither)", ErrConfig)
	}
	if !regexp.MustCompile(`^[0-9]+$`).MatchString(issuerID) {
		return nil, fmt.Errorf("%w: TICKETD_GOOGLE_WALLET_ISSUER_ID %q is not an issuer id (digits, from the Google Pay & Wallet console)", ErrConfig, issuerID)
	}
	b, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("%w: TICKETD_GOOGLE_WALLET_KEY: %w", ErrConfig, err)
	}
	k, err := ParseKey(b)
	if err != nil {
		return nil, fmt.Errorf("%w: TICKETD_GOOGLE_WALLET_KEY (%s): %w", ErrConfig, keyFile, err)
	}
	return &Issuer{id: issuerID, key: k, origins: origins, now: time.Now}, nil
}

// ParseKey parses a service account's JSON key.
func ParseKey(b []byte) (Key, error) {
	var k Key
	if err := json.Unmarshal(b, &k); err != nil {
		return Key{}, fmt.Errorf("not a JSON key: %w", err)
	}
	if k.Type != "service_account" {
		return Key{}, fmt.Errorf("type %q: a service account key has \"service_account\"", k.Type)
	}
	if k.ClientEmail == "" || k.PrivateKey == "" {
		return Key{}, errors.New("client_email or private_key missing")
	}
	blk, _ := pem.Decode([]byte(k.PrivateKey))
	if blk == nil {
		return Key{}, errors.New("private_key is not PEM")
	}
	pk, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		if pk1, err1 := x509.ParsePKCS1PrivateKey(blk.Bytes); err1 == nil {
			pk, err = pk1, nil
		} else {
			return Key{}, fmt.Errorf("private_key: %w", err)
		}
	}
	r, ok := pk.(*rsa.PrivateKey)
	if !ok {
		return Key{}, fmt.Errorf("private_key is %T, not RSA", pk)
	}
	if k.TokenURI == "" {
		k.TokenURI = "https://oauth2.googleapis.com/token"
	}
	k.rsa = r
	return k, nil
}

// PublicKey is the key that verifies the issuer's links.
func (i *Issuer) PublicKey() *rsa.PublicKey { return &i.key.rsa.PublicKey }

// Key is the issuer's service account key (the API client signs its
// token requests with it).
func (i *Issuer) Key() Key { return i.key }

// IssuerID is the Wallet issuer id.
func (i *Issuer) IssuerID() string { return i.id }

var unsafeID = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// ClassID is the id of an event's ticket class.
func (i *Issuer) ClassID(eventID string) string {
	return i.id + "." + unsafeID.ReplaceAllString(eventID, "_")
}

// ObjectID is the id of a ticket's object; serial names the ticket for
// its life (a rotated pass gets a new one).
func (i *Issuer) ObjectID(serial string) string {
	return i.id + "." + unsafeID.ReplaceAllString(serial, "_")
}

// Ticket is what the Save link carries.
type Ticket struct {
	EventID     string
	Serial      string
	EventName   string
	StartsAt    *time.Time
	EndsAt      *time.Time
	Timezone    string
	Venue       string
	Address     string
	Attendee    string
	TicketType  string
	CheckinCode string
}

type localized struct {
	DefaultValue translated `json:"defaultValue"`
}

type translated struct {
	Language string `json:"language"`
	Value    string `json:"value"`
}

func text(s string) *localized {
	if s == "" {
		return nil
	}
	return &localized{DefaultValue: translated{Language: "en", Value: s}}
}

// EventTicketClass is the Wallet API's eventTicketClass, the fields used.
type EventTicketClass struct {
	ID           string     `json:"id"`
	IssuerName   string     `json:"issuerName"`
	EventName    *localized `json:"eventName"`
	ReviewStatus string     `json:"reviewStatus"`
	Venue        *venue     `json:"venue,omitempty"`
	DateTime     *dateTime  `json:"dateTime,omitempty"`
}

type venue struct {
	Name    *localized `json:"name,omitempty"`
	Address *localized `json:"address,omitempty"`
}

type dateTime struct {
	Start string `json:"start,omitempty"`
	End   string `json:"end,omitempty"`
}

// EventTicketObject is the Wallet API's eventTicketObject, the fields
// used.
type EventTicketObject struct {
	ID               string     `json:"id"`
	ClassID          string     `json:"classId"`
	State            string     `json:"state"`
	Barcode          Barcode    `json:"barcode"`
	TicketHolderName string     `json:"ticketHolderName,omitempty"`
	TicketType       *localized `json:"ticketType,omitempty"`
}

// Barcode is an object's barcode.
type Barcode struct {
	Type          string `json:"type"`
	Value         string `json:"value"`
	AlternateText string `json:"alternateText,omitempty"`
}

// SaveClaims are a Save link's JWT claims.
type SaveClaims struct {
	jwt.RegisteredClaims
	Typ     string      `json:"typ"`
	Origins []string    `json:"origins"`
	Payload SavePayload `json:"payload"`
}

// SavePayload is what a Save link creates.
type SavePayload struct {
	EventTicketClasses []EventTicketClass  `json:"eventTicketClasses"`
	EventTicketObjects []EventTicketObject `json:"eventTicketObjects"`
}

// SaveURL is t's Save to Google Wallet link, issued by issuerName (shown
// on the pass).
func (i *Issuer) SaveURL(t Ticket, issuerName string) (string, error) {
	if t.CheckinCode == "" || t.Serial == "" || t.EventID == "" {
		return "", errors.New("google wallet: ticket without event, serial or check-in code")
	}
	loc, err := time.LoadLocation(t.Timezone)
	if err != nil {
		loc = time.UTC
	}
	class := EventTicketClass{ID: i.ClassID(t.EventID), IssuerName: issuerName, EventName: text(t.EventName), ReviewStatus: "UNDER_REVIEW"}
	if t.Venue != "" || t.Address != "" {
		class.Venue = &venue{Name: text(t.Venue), Address: text(t.Address)}
	}
	if t.StartsAt != nil {
		class.DateTime = &dateTime{Start: t.StartsAt.In(loc).Format(time.RFC3339)}
		if t.EndsAt != nil {
			class.DateTime.End = t.EndsAt.In(loc).Format(time.RFC3339)
		}
	}
	obj := EventTicketObject{ID: i.ObjectID(t.Serial), ClassID: class.ID, State: "ACTIVE",
		Barcode:          Barcode{Type: "QR_CODE", Value: t.CheckinCode, AlternateText: t.CheckinCode},
		TicketHolderName: t.Attendee, TicketType: text(t.TicketType)}
	claims := SaveClaims{RegisteredClaims: jwt.RegisteredClaims{Issuer: i.key.ClientEmail, Audience: jwt.ClaimStrings{"google"},
		IssuedAt: jwt.NewNumericDate(i.now())}, Typ: "savetowallet", Origins: i.origins,
		Payload: SavePayload{EventTicketClasses: []EventTicketClass{class}, EventTicketObjects: []EventTicketObject{obj}}}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = i.key.PrivateKeyID
	s, err := tok.SignedString(i.key.rsa)
	if err != nil {
		return "", fmt.Errorf("google wallet: sign: %w", err)
	}
	return SaveBase + s, nil
}

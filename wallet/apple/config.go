package apple

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// ErrConfig: the Apple Wallet configuration cannot sign passes.
var ErrConfig = errors.New("apple wallet")

// Config names the pass type and the files of its credentials.
type Config struct {
	// PassTypeID is the pass type identifier (pass.com.example.tickets),
	// TeamID the Apple Developer team identifier.
	PassTypeID string
	TeamID     string
	// CertFile and KeyFile are the pass type certificate and its private
	// key (PEM; the key unencrypted), WWDRFile Apple's WWDR intermediate
	// certificate (PEM) that issued it.
	CertFile string
	KeyFile  string
	WWDRFile string
	// OrganizationName is shown on the lock screen and in the pass's
	// back (default "ticketd").
	OrganizationName string
	// WebServiceURL is the pass web service's base (https in production;
	// Wallet refuses http except on a development device).
	WebServiceURL string
}

// Configured reports whether any Apple Wallet setting is given; then all
// of them must be.
func (c Config) Configured() bool {
	return c.PassTypeID != "" || c.TeamID != "" || c.CertFile != "" || c.KeyFile != "" || c.WWDRFile != ""
}

// Signer signs passes of one pass type.
type Signer struct {
	cfg  Config
	cert *x509.Certificate
	key  crypto.Signer
	wwdr *x509.Certificate
}

// oidUID is the userId attribute (0.9.2342.19200300.100.1.1) that Apple
// puts the pass type identifier in.
var oidUID = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1}

// Load reads and checks cfg's credentials at now; every error names the
// setting at fault (the environment variable) and never a key's bytes.
func Load(cfg Config, now time.Time) (*Signer, error) {
	var missing []string
	for _, s := range []struct{ v, name string }{{cfg.PassTypeID, "TICKETD_APPLE_PASS_TYPE_ID"}, {cfg.TeamID, "TICKETD_APPLE_TEAM_ID"},
		{cfg.CertFile, "TICKETD_APPLE_PASS_CERT"}, {cfg.KeyFile, "TICKETD_APPLE_PASS_KEY"}, {cfg.WWDRFile, "TICKETD_APPLE_WWDR_CERT"}} {
		if strings.TrimSpace(s.v) == "" {
			missing = append(missing, s.name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: %s not set (Apple Wallet needs all five settings, or none)", ErrConfig, strings.Join(missing, ", "))
	}
	if cfg.OrganizationName == "" {
		cfg.OrganizationName = "ticketd"
	}
	cert, err := readCert(cfg.CertFile, "TICKETD_APPLE_PASS_CERT")
	if err != nil {
		return nil, err
	}
	wwdr, err := readCert(cfg.WWDRFile, "TICKETD_APPLE_WWDR_CERT")
	if err != nil {
		return nil, err
	}
	key, err := readKey(cfg.KeyFile)
	if err != nil {
		return nil, err
	}
	if !publicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, fmt.Errorf("%w: TICKETD_APPLE_PASS_KEY (%s) is not the private key of the certificate TICKETD_APPLE_PASS_CERT (%s)",
			ErrConfig, cfg.KeyFile, cfg.CertFile)
	}
	for _, c := range []struct {
		cert *x509.Certificate
		env  string
	}{{cert, "TICKETD_APPLE_PASS_CERT"}, {wwdr, "TICKETD_APPLE_WWDR_CERT"}} {
		if now.After(c.cert.NotAfter) {
			return nil, fmt.Errorf("%w: the certificate %s (%s) expired on %s; renew it in the Apple Developer account",
				ErrConfig, c.env, c.cert.Subject.CommonName, c.cert.NotAfter.UTC().Format(time.DateOnly))
		}
		if now.Before(c.cert.NotBefore) {
			return nil, fmt.Errorf("%w: the certificate %s (%s) is not valid before %s", ErrConfig, c.env,
				c.cert.Subject.CommonName, c.cert.NotBefore.UTC().Format(time.RFC3339))
		}
	}
	if err := cert.CheckSignatureFrom(wwdr); err != nil {
		return nil, fmt.Errorf("%w: TICKETD_APPLE_PASS_CERT was not issued by TICKETD_APPLE_WWDR_CERT (%s): download the WWDR certificate that issued it (its G number) from Apple PKI",
			ErrConfig, wwdr.Subject.CommonName)
	}
	if uid := subjectUID(cert.Subject); uid != "" && uid != cfg.PassTypeID {
		return nil, fmt.Errorf("%w: TICKETD_APPLE_PASS_CERT is for pass type %q, not TICKETD_APPLE_PASS_TYPE_ID %q", ErrConfig, uid, cfg.PassTypeID)
	}
	return &Signer{cfg: cfg, cert: cert, key: key, wwdr: wwdr}, nil
}

// PassTypeID is the signer's pass type identifier.
func (s *Signer) PassTypeID() string { return s.cfg.PassTypeID }

// Certificate is the pass type certificate (APNs authenticates with it).
func (s *Signer) Certificate() *x509.Certificate { return s.cert }

// PrivateKey is the pass type certificate's key.
func (s *Signer) PrivateKey() crypto.Signer { return s.key }

func subjectUID(n pkix.Name) string {
	for _, a := range n.Names {
		if a.Type.Equal(oidUID) {
			if s, ok := a.Value.(string); ok {
				return s
			}
		}
	}
	return ""
}

func readCert(path, env string) (*x509.Certificate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrConfig, env, err)
	}
	for rest := b; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if blk.Type == "CERTIFICATE" {
			c, err := x509.ParseCertificate(blk.Bytes)
			if err != nil {
				return nil, fmt.Errorf("%w: %s (%s): %w", ErrConfig, env, path, err)
			}
			return c, nil
		}
	}
	// Apple hands out DER (.cer): accept it too.
	if c, err := x509.ParseCertificate(b); err == nil {
		return c, nil
	}
	return nil, fmt.Errorf("%w: %s (%s) holds no certificate (PEM \"CERTIFICATE\" or DER)", ErrConfig, env, path)
}

func readKey(path string) (crypto.Signer, error) {
	const env = "TICKETD_APPLE_PASS_KEY"
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrConfig, env, err)
	}
	for rest := b; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if _, enc := blk.Headers["Proc-Type"]; enc || blk.Type == "ENCRYPTED PRIVATE KEY" {
			return nil, fmt.Errorf("%w: %s (%s) is encrypted: export it without a passphrase (openssl pkcs12 -nodes)", ErrConfig, env, path)
		}
		var k any
		switch blk.Type {
		case "PRIVATE KEY":
			k, err = x509.ParsePKCS8PrivateKey(blk.Bytes)
		case "RSA PRIVATE KEY":
			k, err = x509.ParsePKCS1PrivateKey(blk.Bytes)
		case "EC PRIVATE KEY":
			k, err = x509.ParseECPrivateKey(blk.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s (%s): %w", ErrConfig, env, path, err)
		}
		if s, ok := k.(crypto.Signer); ok {
			return s, nil
		}
		return nil, fmt.Errorf("%w: %s (%s): unsupported key type %T", ErrConfig, env, path, k)
	}
	return nil, fmt.Errorf("%w: %s (%s) holds no PEM private key", ErrConfig, env, path)
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	switch k := a.(type) {
	case *rsa.PublicKey:
		return k.Equal(b)
	case *ecdsa.PublicKey:
		return k.Equal(b)
	case ed25519.PublicKey:
		return k.Equal(b)
	}
	return false
}

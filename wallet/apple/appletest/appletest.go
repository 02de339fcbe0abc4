// Package appletest makes Apple Wallet credentials for tests: a test
// certificate authority standing in for Apple's WWDR intermediate, and a
// pass type certificate it issues, written as PEM files.
package appletest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"ticketd/wallet/apple"
)

// PassTypeID and TeamID of the credentials made here.
const (
	PassTypeID = "pass.test.ticketd"
	TeamID     = "TEAM123456"
)

// Files are the paths of a test's credentials.
type Files struct {
	Cert, Key, WWDR string
	// OtherKey is a key of no certificate (a mismatch test).
	OtherKey string
	// Expired is a pass certificate that expired yesterday, issued by
	// WWDR with Key.
	Expired string
	// CertDER is the pass certificate, for verifying.
	CertDER []byte
}

// Config is the apple.Config of f with webServiceURL base.
func (f Files) Config(base string) apple.Config {
	return apple.Config{PassTypeID: PassTypeID, TeamID: TeamID, CertFile: f.Cert, KeyFile: f.Key, WWDRFile: f.WWDR,
		OrganizationName: "ticketd test", WebServiceURL: base}
}

// Make writes a test CA and a pass type certificate into t's temp dir.
func Make(t testing.TB) Files {
	t.Helper()
	dir := t.TempDir()
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Test WWDR Certification Authority", OrganizationalUnit: []string{"G4"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	must(t, err)
	caCert, err := x509.ParseCertificate(caDER)
	must(t, err)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	must(t, err)
	leaf := func(serial int64, notAfter time.Time) []byte {
		tpl := &x509.Certificate{SerialNumber: big.NewInt(serial),
			Subject: pkix.Name{CommonName: "Pass Type ID: " + PassTypeID, OrganizationalUnit: []string{TeamID},
				ExtraNames: []pkix.AttributeTypeAndValue{{Type: asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1}, Value: PassTypeID}}},
			NotBefore: now.Add(-48 * time.Hour), NotAfter: notAfter,
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
		der, err := x509.CreateCertificate(rand.Reader, tpl, caCert, &key.PublicKey, caKey)
		must(t, err)
		return der
	}
	certDER := leaf(2, now.Add(24*time.Hour))
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	must(t, err)
	f := Files{Cert: filepath.Join(dir, "pass.pem"), Key: filepath.Join(dir, "pass.key"), WWDR: filepath.Join(dir, "wwdr.pem"),
		OtherKey: filepath.Join(dir, "other.key"), Expired: filepath.Join(dir, "expired.pem"), CertDER: certDER}
	write(t, f.Cert, "CERTIFICATE", certDER)
	write(t, f.WWDR, "CERTIFICATE", caDER)
	write(t, f.Expired, "CERTIFICATE", leaf(3, now.Add(-24*time.Hour)))
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	must(t, err)
	write(t, f.Key, "PRIVATE KEY", kb)
	write(t, f.OtherKey, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(other))
	return f
}

func write(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	must(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("appletest: %v", err)
	}
}

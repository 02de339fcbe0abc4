package app

import (
	"ticketd/wallet"
	"ticketd/wallet/apple"
)

// WalletConfig holds the wallet settings (decisions §21); empty leaves a
// wallet off. Every path names a file read once at start.
type WalletConfig struct {
	ApplePassTypeID string
	AppleTeamID     string
	ApplePassCert   string
	ApplePassKey    string
	AppleWWDRCert   string
	GoogleIssuerID  string
	GoogleKey       string
}

// openWallet loads the configured wallets: a bad file, a key that is not
// its certificate's, an expired certificate or a bad JSON key stops the
// start here, never at a buyer's request. secret derives the Apple
// passes' authentication tokens (the hosted pages' secret).
func (m *Main) openWallet(secret func() []byte) error {
	w := m.cfg.Wallet
	wc := wallet.Config{
		Apple: apple.Config{PassTypeID: w.ApplePassTypeID, TeamID: w.AppleTeamID, CertFile: w.ApplePassCert,
			KeyFile: w.ApplePassKey, WWDRFile: w.AppleWWDRCert},
		GoogleIssuer: w.GoogleIssuerID, GoogleKey: w.GoogleKey,
		BaseURL: m.cfg.BaseURL, Secret: secret, Store: m.store, Logger: m.log,
	}
	if t := m.cfg.Tune; t != nil && t.Wallet != nil {
		t.Wallet(&wc)
	}
	s, err := wallet.New(wc)
	if err != nil {
		return err
	}
	m.wallet.Store(s)
	return nil
}

// passChanged is the actors' OnPassChange: what a changed registration
// or event owes the wallets, once the wallet is open.
func (m *Main) passChanged(eventID string, regIDs []string, all bool) {
	w := m.wallet.Load()
	if w == nil {
		return
	}
	if all {
		w.Changed(eventID, "")
		return
	}
	for _, id := range regIDs {
		w.Changed(eventID, id)
	}
}

// closeWallet stops the wallet's change worker.
func (m *Main) closeWallet() {
	if w := m.wallet.Swap(nil); w != nil {
		w.Close()
	}
}

// walletSecret is the key of the Apple passes' authentication tokens:
// the cluster's pages secret when there is one (the same token on every
// node), else this node's kept one.
func walletSecret(local string, shared func() []byte) func() []byte {
	return func() []byte {
		if shared != nil {
			if s := shared(); len(s) > 0 {
				return s
			}
		}
		return []byte(local)
	}
}

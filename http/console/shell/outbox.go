package shell

import (
	"ticketd/mail"
)

// Outbox is the ticket-mail outbox as the console uses it (mail.Mailer).
type Outbox interface {
	Pending(after string, limit int) ([]mail.Entry, error)
	Retry(id string) (mail.Entry, error)
}

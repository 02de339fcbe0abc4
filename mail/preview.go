package mail

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	netmail "net/mail"
	"strings"
)

// MaxPreview bounds a rendered message a preview reads back (a ticket
// email is a few tens of kilobytes).
const MaxPreview = 4 << 20

// maxParts bounds the MIME parts a preview walks.
const maxParts = 32

// Preview renders owed mail id (its key after InboxPrefix) as
// it would be sent now, without sending it: the entry with its delivery
// state, and the whole RFC 5322 message. outbox.ErrNotFound when there is
// no such entry (delivered already, or never owed). It needs no SMTP
// server: an operator without one can read what is waiting.
func (m *Mailer) Preview(id string) (Entry, []byte, error) {
	e, err := m.queue.Get(id)
	if err != nil {
		return Entry{}, nil, err
	}
	out := m.entry(e)
	msg, err := m.Render(out.TicketMail)
	if err != nil {
		return out, nil, err
	}
	var b bytes.Buffer
	if _, err := msg.WriteTo(&b); err != nil {
		return out, nil, fmt.Errorf("mail: preview %s: %w", id, err)
	}
	return out, b.Bytes(), nil
}

// Message is a rendered email read back part by part, what a preview
// shows.
type Message struct {
	// Headers are the top-level headers, encoded words decoded.
	Headers map[string]string
	Text    string
	HTML    string
	// Attachments are the parts sent as files.
	Attachments []Attachment
}

// Attachment is one attached file of a Message.
type Attachment struct {
	Filename    string
	ContentType string
	Content     []byte
}

// ParseMessage reads a rendered message back: the headers, the text and
// HTML parts and the attachments, decoding transfer encodings. It walks
// nested multiparts (mixed around alternative), at most maxParts parts.
func ParseMessage(raw []byte) (Message, error) {
	msg, err := netmail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return Message{}, fmt.Errorf("mail: read message: %w", err)
	}
	out := Message{Headers: map[string]string{}}
	dec := new(mime.WordDecoder)
	for k, vs := range msg.Header {
		v := strings.Join(vs, ", ")
		if d, err := dec.DecodeHeader(v); err == nil {
			v = d
		}
		out.Headers[k] = v
	}
	n := 0
	err = walk(&out, msg.Header, msg.Body, &n)
	return out, err
}

type header interface{ Get(string) string }

func walk(out *Message, h header, body io.Reader, n *int) error {
	if *n++; *n > maxParts {
		return errors.New("mail: too many parts")
	}
	mt, params, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil {
		mt = "text/plain"
	}
	if strings.HasPrefix(mt, "multipart/") {
		mr := multipart.NewReader(body, params["boundary"])
		for {
			p, err := mr.NextRawPart()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return fmt.Errorf("mail: read part: %w", err)
			}
			if err := walk(out, p.Header, p, n); err != nil {
				return err
			}
		}
	}
	r := io.LimitReader(body, MaxPreview)
	switch strings.ToLower(h.Get("Content-Transfer-Encoding")) {
	case "quoted-printable":
		r = quotedprintable.NewReader(r)
	case "base64":
		r = base64.NewDecoder(base64.StdEncoding, r)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("mail: decode part: %w", err)
	}
	disp, dparams, _ := mime.ParseMediaType(h.Get("Content-Disposition"))
	switch {
	case disp == "attachment" || (disp != "" && dparams["filename"] != ""):
		out.Attachments = append(out.Attachments, Attachment{Filename: dparams["filename"], ContentType: h.Get("Content-Type"), Content: b})
	case mt == "text/plain" && out.Text == "":
		out.Text = string(b)
	case mt == "text/html" && out.HTML == "":
		out.HTML = string(b)
	default:
		out.Attachments = append(out.Attachments, Attachment{Filename: params["name"], ContentType: h.Get("Content-Type"), Content: b})
	}
	return nil
}

package mail

import (
	"fmt"
	htmltemplate "html/template"
	texttemplate "text/template"
)

const textBody = `Hello{{with .Name}} {{.}}{{end}},

your ticket for {{.EventName}} is confirmed.

Ticket: {{.TicketName}}
Check-in code: {{.CheckinCode}}

Your entry pass (show it at the door):
{{.PassURL}}

The pass page asks for this email address before it shows anything.
Keep this link to yourself: anyone with it and your email can open the pass.
`

const htmlBody = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Your ticket: {{.EventName}}</title></head>
<body style="margin:0;padding:24px;background:#f4f5f7;font:16px/1.5 system-ui,-apple-system,Segoe UI,sans-serif;color:#1b1f24">
<div style="max-width:520px;margin:0 auto;background:#fff;border-radius:12px;padding:24px;border:1px solid #d8dce1">
<p>Hello{{with .Name}} {{.}}{{end}},</p>
<h1 style="font-size:22px;margin:0 0 12px">Your ticket for {{.EventName}} is confirmed</h1>
<p><strong>Ticket:</strong> {{.TicketName}}<br><strong>Check-in code:</strong> <code>{{.CheckinCode}}</code></p>
<p><a href="{{.PassURL}}" style="display:inline-block;background:#1747b5;color:#fff;text-decoration:none;padding:12px 20px;border-radius:8px;font-weight:600">Open your entry pass</a></p>
<p style="color:#4a5360;font-size:14px">Or copy this link: {{.PassURL}}<br>The pass page asks for this email address before it shows anything.</p>
</div></body></html>`

func parseTemplates() (*texttemplate.Template, *htmltemplate.Template, error) {
	t, err := texttemplate.New("text").Parse(textBody)
	if err != nil {
		return nil, nil, fmt.Errorf("mail: parse text template: %w", err)
	}
	h, err := htmltemplate.New("html").Parse(htmlBody)
	if err != nil {
		return nil, nil, fmt.Errorf("mail: parse html template: %w", err)
	}
	return t, h, nil
}

package eventwork

import (
	"context"
	"encoding/base64"
	"html/template"
	"strings"
	"time"

	"github.com/skip2/go-qrcode"

	"ticketd/directory"
	"ticketd/event"
	"ticketd/http/console/shell"
	"ticketd/ops"
)

// The devices page of an event (decisions §18): its door devices with
// their doors, status and when each was last seen, a form that makes one
// and shows its setup link as a QR code (once), revoke, and the event's
// door conflicts.

// deviceRow is one device of the page.
type deviceRow struct {
	Device   directory.Device
	Doors    []string // door labels
	LastSeen string
}

// devicesData is the devices page.
type devicesData struct {
	Devices   []deviceRow
	Doors     []doorOption
	Conflicts []event.DoorConflict
	Names     map[string]string // device id -> name
	// New is the device just made: its setup link, shown once.
	New      *directory.Device
	SetupURL string
	SetupQR  template.URL
}

func (c *pages) devicesPage(r *shell.Req) error {
	return c.showDevices(r, &shell.View{}, &devicesData{}, 200)
}

func (c *pages) showDevices(r *shell.Req, v *shell.View, d *devicesData, status int) error {
	v.Title = "Devices"
	eventID, unitID, err := c.EventHead(r, v, shell.PermWrite)
	if err != nil {
		return err
	}
	if d.Doors, err = c.doors(eventID); err != nil {
		return err
	}
	labels := map[string]string{}
	for _, o := range d.Doors {
		labels[o.Value] = o.Label
	}
	d.Names = map[string]string{}
	for _, dev := range c.Ops.Directory().Devices(eventID) {
		if dev.UnitID != unitID {
			continue
		}
		row := deviceRow{Device: dev, LastSeen: "never"}
		for _, door := range dev.Doors {
			k := door.SubjectType
			if door.SubjectID != "" {
				k += ":" + door.SubjectID
			}
			if l, ok := labels[k]; ok {
				row.Doors = append(row.Doors, l)
			} else {
				row.Doors = append(row.Doors, k+" (deleted)")
			}
		}
		if at, ok := c.Ops.DeviceSeen(dev.ID); ok {
			row.LastSeen = at.Format("2006-01-02 15:04:05 UTC")
		}
		d.Names[dev.ID] = dev.Name
		d.Devices = append(d.Devices, row)
	}
	conflicts, err := shell.AskOp(c.Console, eventID, event.ListDoorConflicts{Limit: 50})
	if err != nil {
		return err
	}
	d.Conflicts = conflicts.Data
	v.Any = d
	c.Render(r.RC, status, "devices", v)
	return nil
}

// createDevice makes a device as the Developer API does and shows its
// setup link and QR code once.
func (c *pages) createDevice(r *shell.Req) error {
	eventID, unitID, err := r.EventUnit(shell.PermWrite)
	if err != nil {
		return err
	}
	name := shell.Form(r.RC, "name")
	v := &shell.View{Form: map[string]string{"name": name}, Errors: map[string]string{}}
	var doors []event.DoorRef
	r.RC.PostArgs().VisitAll(func(k, val []byte) {
		if string(k) != "door" {
			return
		}
		typ, id, _ := strings.Cut(string(val), ":")
		doors = append(doors, event.DoorRef{SubjectType: typ, SubjectID: id})
	})
	if name == "" || len(name) > 100 {
		v.Errors["name"] = "It must be 1 to 100 characters."
		return c.showDevices(r, v, &devicesData{}, 400)
	}
	checked, err := shell.AskOp(c.Console, eventID, event.CheckDoors{Doors: doors})
	if err != nil {
		if shell.FieldErrors(err, v) {
			return c.showDevices(r, v, &devicesData{}, 400)
		}
		return err
	}
	spec := ops.DeviceSpec{UnitID: unitID, EventID: eventID, Name: name}
	for _, dr := range checked.Doors {
		spec.Doors = append(spec.Doors, directory.Door{SubjectType: dr.SubjectType, SubjectID: dr.SubjectID})
	}
	dev, code, err := c.Ops.CreateDevice(context.Background(), spec)
	if err != nil {
		return err
	}
	r.Audit("createDevice", unitID, map[string]string{"eventId": eventID, "deviceId": dev.ID}, map[string]any{"id": dev.ID, "name": dev.Name})
	d := &devicesData{New: &dev, SetupURL: c.Config.BaseURL + "/door?setup=" + code}
	if png, err := qrcode.Encode(d.SetupURL, qrcode.Medium, 320); err == nil {
		d.SetupQR = template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(png))
	}
	v.Notice = "Device " + dev.Name + " made: open its setup link on the device within " + directory.SetupTTL.String() +
		" (until " + dev.SetupExpiresAt.Format(time.TimeOnly) + " UTC)."
	return c.showDevices(r, v, d, 201)
}

func (c *pages) revokeDevice(r *shell.Req) error {
	eventID, unitID, err := r.EventUnit(shell.PermWrite)
	if err != nil {
		return err
	}
	id := shell.Param(r.RC, "deviceId")
	dev, ok := c.Ops.Directory().Device(id)
	if !ok || dev.EventID != eventID || dev.UnitID != unitID {
		return shell.ErrNotFound
	}
	if _, err := c.Ops.RevokeDevice(context.Background(), id); err != nil {
		return err
	}
	r.Audit("revokeDevice", unitID, map[string]string{"eventId": eventID, "deviceId": id}, map[string]any{"id": id, "status": "revoked"})
	return shell.Redirect(r, "/console/events/"+eventID+"/devices")
}

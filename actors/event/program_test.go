package event

// programCommands lists the program's commands for scripts and fuzzing.
func programCommands() []Command {
	return []Command{
		CreateVenue{}, UpdateVenue{}, GetVenue{}, ListVenues{}, DeleteVenue{},
		CreateSession{}, UpdateSession{}, GetSession{}, ListSessions{}, DeleteSession{},
		CreateSpeaker{}, UpdateSpeaker{}, GetSpeaker{}, ListSpeakers{}, DeleteSpeaker{},
		CreateSponsor{}, UpdateSponsor{}, GetSponsor{}, ListSponsors{}, DeleteSponsor{},
		CreatePerk{}, UpdatePerk{}, GetPerk{}, ListPerks{}, DeletePerk{},
		SetTicketTypePerks{}, SetCodePerks{}, GrantPerk{}, RevokePerk{}, GetRegistrationPerks{}, ListAttendees{},
	}
}

package event

import "github.com/google/uuid"

// NewID returns a fresh UUIDv7 (time-ordered) as a string. Run ids and event
// ids are UUIDv7 so that they sort by creation time.
func NewID() string {
	id, err := uuid.NewV7()
	if err != nil {
		// NewV7 fails only if the system random source fails.
		panic("event: uuid: " + err.Error())
	}
	return id.String()
}

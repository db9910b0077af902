package cli

import (
	"bufio"
	"io"
	"strings"
)

// event is one Server-Sent Event.
type event struct {
	ID, Name, Data string
}

// maxEventBytes bounds one event's data: the server sends log chunks of at most 64 KiB.
const maxEventBytes = 4 << 20

// readLine reads one line without its end (LF or CRLF), of at most maxEventBytes.
func readLine(br *bufio.Reader) (string, error) {
	var b []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(b)+len(chunk) > maxEventBytes {
			return "", errEventTooLarge
		}
		b = append(b, chunk...)
		switch err {
		case nil:
			return strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r"), nil
		case bufio.ErrBufferFull:
			continue
		default:
			return "", err
		}
	}
}

// readEvents reads the SSE stream r and calls fn with each event, in order, until r ends or
// fn returns false. Comment lines (heartbeats) are skipped; a line longer than the reader's
// buffer, or an event over maxEventBytes, ends the stream with an error.
func readEvents(r io.Reader, fn func(event) bool) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var ev event
	var data strings.Builder
	hasData := false
	for {
		line, err := readLine(br)
		if err != nil {
			if err == io.EOF {
				return nil // an unfinished event is dropped, as the format says
			}
			return err
		}
		if line == "" {
			if hasData {
				ev.Data = data.String()
				if !fn(ev) {
					return nil
				}
			}
			ev, hasData = event{ID: ev.ID}, false // the last id carries over
			data.Reset()
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			if !strings.ContainsRune(value, 0) {
				ev.ID = value
			}
		case "event":
			ev.Name = value
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			if data.Len()+len(value) > maxEventBytes {
				return errEventTooLarge
			}
			data.WriteString(value)
			hasData = true
		}
	}
}

package realtime

import (
	"os"

	"github.com/zishang520/socket.io/v3/pkg/log"
)

func init() {
	if os.Getenv("DEBUG") != "" {
		log.DEBUG.Store(true)
	}
}

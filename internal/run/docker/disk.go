package docker

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// DefaultDiskPoll is how often Wait measures a container's writable layer by default.
const DefaultDiskPoll = 2 * time.Second

// diskPollCost bounds the engine's time spent measuring one container: measuring walks the
// container's writable layer, so the interval grows to diskPollCost times the last measurement
// (a layer of 100,000 files takes the engine about a second).
const diskPollCost = 20

// Whether the engine bounds a container's writable layer itself (StorageOpt size): only some
// storage drivers can (overlay2 on xfs mounted with pquota, btrfs, zfs, devicemapper). Unknown
// until the first create that asks for it.
const (
	quotaUnknown int32 = iota
	quotaSupported
	quotaUnsupported
)

// storageQuota is the StorageOpt that asks the engine to bound the writable layer a little
// above the disk limit: the watchdog ends the run when the layer passes the limit, and the quota
// bounds how far a run can write past it between two measurements. Nil when the engine cannot.
func (b *Backend) storageQuota() map[string]string {
	limit := b.opts.DiskLimitBytes
	if limit <= 0 || b.quota.Load() == quotaUnsupported {
		return nil
	}
	return map[string]string{"size": strconv.FormatInt(limit+max(limit/8, 1<<20), 10)}
}

// watchDisk measures the container's writable layer until ctx ends. When it passes the disk
// limit, it sets exceeded, kills the container (a run filling the disk gets no grace period)
// and sends the size it measured.
func (b *Backend) watchDisk(ctx context.Context, id string, exceeded *atomic.Bool) <-chan int64 {
	over := make(chan int64, 1)
	go func() {
		interval := b.opts.DiskPoll
		if interval <= 0 {
			interval = DefaultDiskPoll
		}
		t := time.NewTimer(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			began := time.Now()
			mctx, cancel := context.WithTimeout(ctx, time.Minute)
			res, err := b.cli.ContainerInspect(mctx, id, client.ContainerInspectOptions{Size: true})
			cancel()
			switch {
			case err != nil && (ctx.Err() != nil || cerrdefs.IsNotFound(err)):
				return
			case err != nil:
				b.log().Warn("measuring a run container's disk use failed", "container", id, "err", err)
			case res.Container.SizeRw != nil && *res.Container.SizeRw > b.opts.DiskLimitBytes:
				exceeded.Store(true)
				kctx, kcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
				if _, err := b.cli.ContainerKill(kctx, id, client.ContainerKillOptions{Signal: "KILL"}); err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
					b.log().Warn("killing a run container past its disk limit failed", "container", id, "err", err)
				}
				kcancel()
				over <- *res.Container.SizeRw
				return
			}
			t.Reset(max(interval, diskPollCost*time.Since(began)))
		}
	}()
	return over
}

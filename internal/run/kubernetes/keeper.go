package kubernetes

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"syscall"
)

const keeperUsage = `Usage (inside a run's pod on Kubernetes; not meant to be typed):
  verdict reports-keeper hold          wait for SIGTERM, keeping the pod's report folders
  verdict reports-keeper tar PATH      write the folder PATH as a tar to stdout
  verdict reports-keeper ls PATH       print the folders directly under PATH
  verdict reports-keeper install DEST  copy this binary to DEST`

// KeeperMain is `verdict reports-keeper`: the helper a run's pod runs from the verdict image,
// beside the suite, so that reports and folders are read without any tool in the suite image.
// Exit codes: 0 done, 2 usage, 3 PATH does not exist, 1 anything else.
func KeeperMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, keeperUsage)
		return 2
	}
	var err error
	switch {
	case args[0] == "hold" && len(args) == 1:
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		<-ctx.Done()
		stop()
		return 0
	case args[0] == "tar" && len(args) == 2:
		err = writeTar(stdout, stderr, args[1])
	case args[0] == "ls" && len(args) == 2:
		err = listDirs(stdout, args[1])
	case args[0] == "install" && len(args) == 2:
		err = install(args[1])
	default:
		fmt.Fprintln(stderr, keeperUsage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case os.IsNotExist(err):
		fmt.Fprintln(stderr, "verdict reports-keeper:", err)
		return exitPathNotFound
	}
	fmt.Fprintln(stderr, "verdict reports-keeper:", err)
	return 1
}

// writeTar writes the folder root as a tar whose entries start with its base name (/app gives
// app/junit/...), as `docker cp` does. Symbolic links go in as links, never followed; a file it
// may not read is left out with a word on stderr rather than losing the rest.
func writeTar(w, stderr io.Writer, root string) error {
	root = filepath.Clean(root)
	if _, err := os.Lstat(root); err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	base := filepath.Base(root)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			fmt.Fprintf(stderr, "skipped %s: %v\n", p, err)
			return nil
		}
		info, err := d.Info()
		if err != nil {
			fmt.Fprintf(stderr, "skipped %s: %v\n", p, err)
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		name := filepath.ToSlash(filepath.Join(base, rel))
		var link string
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				fmt.Fprintf(stderr, "skipped %s: %v\n", p, err)
				return nil
			}
		} else if !info.Mode().IsRegular() && !info.IsDir() {
			return nil // devices, sockets, pipes: not reports
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		hdr.Name = name
		if info.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uname, hdr.Gname = "", ""
		if !info.Mode().IsRegular() {
			return tw.WriteHeader(hdr)
		}
		f, err := os.Open(p)
		if err != nil {
			fmt.Fprintf(stderr, "skipped %s: %v\n", p, err)
			return nil
		}
		defer f.Close()
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		// A file that grows meanwhile is cut at its size when listed: the header said so.
		_, err = io.CopyN(tw, f, hdr.Size)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// listDirs prints the folders directly under root, sorted, one per line.
func listDirs(w io.Writer, root string) error {
	entries, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
		}
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		if _, err := fmt.Fprintln(w, d); err != nil {
			return err
		}
	}
	return nil
}

// install copies the running binary to dest, so that a container of another image can run it.
func install(dest string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	src, err := os.Open(self)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(dest, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

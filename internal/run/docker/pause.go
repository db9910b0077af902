package docker

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
)

// pauseCode is the whole program of a sandbox's process, per engine architecture (as the engine
// names it): wait for signals forever. Without a handler, the SIGKILL that removes the sandbox
// ends it; nothing else reaches it.
var pauseCode = map[string]struct {
	machine elf.Machine
	code    []byte
}{
	"x86_64": {elf.EM_X86_64, []byte{
		0xb8, 0x22, 0x00, 0x00, 0x00, // loop: mov eax, 34 (pause)
		0x0f, 0x05, //                          syscall
		0xeb, 0xf7, //                          jmp loop
	}},
	"aarch64": {elf.EM_AARCH64, le32( // arm64 has no pause: ppoll(NULL, 0, NULL, NULL) waits alike
		0xd2800000, // loop: mov x0, #0
		0xd2800001, //       mov x1, #0
		0xd2800002, //       mov x2, #0
		0xd2800003, //       mov x3, #0
		0xd2800928, //       mov x8, #73 (ppoll)
		0xd4000001, //       svc #0
		0x17fffffa, //       b loop
	)},
}

func le32(words ...uint32) []byte {
	b := make([]byte, 0, 4*len(words))
	for _, w := range words {
		b = binary.LittleEndian.AppendUint32(b, w)
	}
	return b
}

// pauseELF returns a static Linux executable of pauseCode for the engine architecture arch
// ("x86_64", "aarch64"), false for another: one loadable segment holding the headers and the
// code, some 130 bytes. A sandbox needs an image, and this one is made on the engine itself, so
// that no registry is needed and nothing larger is stored.
func pauseELF(arch string) ([]byte, bool) {
	p, ok := pauseCode[arch]
	if !ok {
		return nil, false
	}
	const base = 0x400000
	hdrSize, progSize := binary.Size(elf.Header64{}), binary.Size(elf.Prog64{})
	codeOff := uint64(hdrSize + progSize)
	size := codeOff + uint64(len(p.code))
	h := elf.Header64{
		Type:      uint16(elf.ET_EXEC),
		Machine:   uint16(p.machine),
		Version:   uint32(elf.EV_CURRENT),
		Entry:     base + codeOff,
		Phoff:     uint64(hdrSize),
		Ehsize:    uint16(hdrSize),
		Phentsize: uint16(progSize),
		Phnum:     1,
	}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	h.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	h.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	h.Ident[elf.EI_OSABI] = byte(elf.ELFOSABI_NONE)
	prog := elf.Prog64{
		Type:   uint32(elf.PT_LOAD),
		Flags:  uint32(elf.PF_R | elf.PF_X),
		Vaddr:  base,
		Paddr:  base,
		Filesz: size,
		Memsz:  size,
		Align:  0x1000,
	}
	var buf bytes.Buffer
	_ = binary.Write(&buf, binary.LittleEndian, h) // a bytes.Buffer does not fail
	_ = binary.Write(&buf, binary.LittleEndian, prog)
	buf.Write(p.code)
	return buf.Bytes(), true
}

package analyzer

import (
	"testing"

	"verdict/internal/ai"
	"verdict/internal/domain"
)

// TestExceptionsAreJudgedByWhereTheStackRaisedThem: the stack, not only the message, decides
// between the test's code and the product's: a JVM frame of the suite's package that is not a
// test class is the product, a _test.go file is the suite, any other Go file the product.
func TestExceptionsAreJudgedByWhereTheStackRaisedThem(t *testing.T) {
	for _, c := range []struct {
		name, suite, stack string
		want               ai.Category
	}{
		{"raised in the product's class, below JDK frames", "org.apache.commons.lang3.math.NumberUtilsTest",
			"java.lang.NumberFormatException: For input string: \"80000000\"\n" +
				"\tat java.lang.NumberFormatException.forInputString(NumberFormatException.java:65)\n" +
				"\tat java.lang.Integer.parseInt(Integer.java:583)\n\tat java.lang.Integer.decode(Integer.java:1197)\n" +
				"\tat org.apache.commons.lang3.math.NumberUtils.createInteger(NumberUtils.java:684)\n" +
				"\tat org.apache.commons.lang3.math.NumberUtilsTest.TestLang747(NumberUtilsTest.java:256)",
			ai.ProductBug},
		{"raised in the test class", "com.acme.shop.CartTest",
			"com.acme.shop.fixtures.FixtureException: no product with id 7\n" +
				"\tat com.acme.shop.CartTest.setUp(CartTest.java:31)\n" +
				"\tat java.base/jdk.internal.reflect.DirectMethodHandleAccessor.invoke(DirectMethodHandleAccessor.java:103)",
			ai.TestBug},
		{"a Go panic in a _test.go file", "github.com/hashicorp/consul/agent/consul",
			"panic: runtime error: invalid memory address or nil pointer dereference [recovered]\n" +
				"goroutine 82 [running]:\ntesting.tRunner.func1(0xc4201ed680)\n\t/usr/local/go/src/testing/testing.go:711 +0x2d2\n" +
				"panic(0x16faba0, 0x1b652e0)\n\t/usr/local/go/src/runtime/panic.go:491 +0x283\n" +
				"github.com/hashicorp/consul/agent/consul.TestCatalog_ListNodes(0xc4201ed680)\n" +
				"\t/src/github.com/hashicorp/consul/agent/consul/catalog_endpoint_test.go:812 +0x3fe",
			ai.TestBug},
		{"a Go panic in the product's file", "gitlab.com/techschool/pcbook/service",
			"panic: runtime error: invalid memory address or nil pointer dereference [recovered]\n" +
				"goroutine 35 [running]:\ntesting.tRunner.func1.1(0x15663a0, 0x1a9bd50)\n\t/usr/local/opt/go/libexec/src/testing/testing.go:940 +0x2f5\n" +
				"gitlab.com/techschool/pcbook/service.(*LaptopServer).CreateLaptop(0xc000094f30)\n" +
				"\t/Users/mac/pcbook/service/laptop_server.go:47 +0x124\n" +
				"gitlab.com/techschool/pcbook/service_test.TestServerCreateLaptop.func1(0xc0000ba000)\n" +
				"\t/Users/mac/pcbook/service/laptop_server_test.go:72 +0xd0",
			ai.ProductBug},
	} {
		msg, _ := SplitError(c.stack)
		exit := 1
		in := Input{TaskID: "run-1", ExitCode: &exit, Tests: []Test{{TestResult: domain.TestResult{Suite: c.suite, Name: "t", Status: domain.TestFailed, Error: msg}, Stack: c.stack}}}
		if got := Analyse(in, History{}, nil).Failures[0]; got.Category != c.want {
			t.Errorf("%s: %s by %s (%s), want %s", c.name, got.Category, got.Reason.Rule, got.Reason.Detail, c.want)
		}
	}
}

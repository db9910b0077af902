package shop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class CartTest {
    @Test
    void emptyCartCostsNothing() {
        assertEquals(0, Order.totalCents());
    }

    @Test
    void runsInCi() {
        // Verdict's contract: CI=true in every run.
        assertTrue("true".equals(System.getenv("CI")), "CI should be true");
    }
}

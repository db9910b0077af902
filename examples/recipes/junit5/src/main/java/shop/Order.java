package shop;

/** The "product" the recipe's tests check. */
public final class Order {
    private Order() {}

    /** Order ids are numbers: "ORD-17" throws NumberFormatException, as a real bug would. */
    public static int parseId(String text) {
        return Integer.parseInt(text);
    }

    public static int totalCents(int... pricesCents) {
        int sum = 0;
        for (int p : pricesCents) {
            sum += p;
        }
        return sum;
    }
}

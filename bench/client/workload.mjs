// The one workload every runner sends: track calls of about 300 bytes once serialised
// (with messageId, timestamp and context.library added by the client).
export function trackMessage(i) {
  return {
    userId: `user-${i % 5000}`,
    event: 'Order Completed',
    properties: {
      orderId: `ord-${i}`,
      revenue: 42.5,
      currency: 'EUR',
      sku: 'SKU-000123-BLUE-M',
    },
  };
}

// The three message shapes of the mapper benchmark: each with its
// generator, its mapper rules, and the jq program a user would otherwise write.
// Messages come from a seeded generator, so every run maps the same data.

/** mulberry32: small, seedable, good enough to vary benchmark data. */
export const rng = (seed) => () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

const pick = (r, list) => list[Math.floor(r() * list.length)];
const word = (r, n) => Array.from({ length: n }, () => pick(r, 'abcdefghijklmnopqrstuvwxyz')).join('');
const iso = (r) => new Date(Date.UTC(2024, 0, 1) + Math.floor(r() * 3e10)).toISOString();

/** jq object construction `{a: .x.a, b: .x.b}` for plain copies. */
const jqCopies = (pairs) => pairs.map(([key, expr]) => `${key}: ${expr}`).join(', ');

// (a) A flat change-data-capture record: a Debezium-style envelope whose
// `after` image has 20 columns, all copied out.
const FLAT_FIELDS = [
  'id',
  'customer_id',
  'status',
  'email',
  'first_name',
  'last_name',
  'country',
  'city',
  'postcode',
  'phone',
  'balance',
  'credit_limit',
  'is_active',
  'is_verified',
  'created_at',
  'updated_at',
  'plan',
  'seats',
  'score',
  'notes',
];

const flatMessage = (r, i) => ({
  before: null,
  after: {
    id: i,
    customer_id: Math.floor(r() * 1e6),
    status: pick(r, ['active', 'paused', 'closed']),
    email: `${word(r, 8)}@example.com`,
    first_name: word(r, 6),
    last_name: word(r, 9),
    country: pick(r, ['FR', 'DE', 'US', 'JP', 'BR']),
    city: word(r, 7),
    postcode: String(10000 + Math.floor(r() * 89999)),
    phone: `+33${Math.floor(r() * 1e9)}`,
    balance: Math.round(r() * 1e6) / 100,
    credit_limit: Math.floor(r() * 1e4),
    is_active: r() > 0.2,
    is_verified: r() > 0.5,
    created_at: iso(r),
    updated_at: iso(r),
    plan: pick(r, ['free', 'team', 'enterprise']),
    seats: Math.floor(r() * 500),
    score: r(),
    notes: word(r, 24),
  },
  source: { connector: 'postgresql', db: 'crm', schema: 'public', table: 'accounts', lsn: i * 4096 },
  op: 'u',
  ts_ms: 1700000000000 + i,
});

// (b) A nested order whose 10 items and 10 shipments (parallel arrays under
// different roots) are zipped into 10 rows, with the order header repeated.
const nestedMessage = (r, i) => ({
  id: i,
  created_at: iso(r),
  currency: pick(r, ['EUR', 'USD']),
  customer: { id: Math.floor(r() * 1e6), email: `${word(r, 8)}@example.com`, tier: pick(r, ['gold', 'std']) },
  items: Array.from({ length: 10 }, (_, k) => ({
    line: k + 1,
    sku: `SKU-${word(r, 6)}`,
    qty: 1 + Math.floor(r() * 5),
    unit_price: Math.round(r() * 1e4) / 100,
  })),
  shipments: Array.from({ length: 10 }, () => ({
    parcel: word(r, 12),
    carrier: pick(r, ['ups', 'dhl', 'laposte']),
    weight_g: Math.floor(r() * 5000),
  })),
});

const NESTED_COLUMNS = [
  ['order_id', 'id', '$m.id'],
  ['created_at', 'created_at', '$m.created_at'],
  ['currency', 'currency', '$m.currency'],
  ['customer_id', 'customer|id', '$m.customer.id'],
  ['line', 'items|*|line', '$m.items[$i].line'],
  ['sku', 'items|*|sku', '$m.items[$i].sku'],
  ['qty', 'items|*|qty', '$m.items[$i].qty'],
  ['unit_price', 'items|*|unit_price', '$m.items[$i].unit_price'],
  ['parcel', 'shipments|*|parcel', '$m.shipments[$i].parcel'],
  ['carrier', 'shipments|*|carrier', '$m.shipments[$i].carrier'],
  ['weight_g', 'shipments|*|weight_g', '$m.shipments[$i].weight_g'],
];

// (c) A record of about 1 KB with one hashed column, one encrypted column and
// three casts (float, bool, datetime with a strftime format), among plain copies.
const wideMessage = (r, i) => ({
  id: i,
  email: `${word(r, 10)}@example.com`,
  ssn: `${100 + Math.floor(r() * 899)}-${10 + Math.floor(r() * 89)}-${1000 + Math.floor(r() * 8999)}`,
  amount: (r() * 1e4).toFixed(2),
  active: pick(r, ['yes', 'no', 'true', 'false', '1', '0']),
  signed_at: `2024-${String(1 + Math.floor(r() * 12)).padStart(2, '0')}-${String(1 + Math.floor(r() * 28)).padStart(2, '0')} 1${Math.floor(r() * 10)}:2${Math.floor(r() * 10)}:3${Math.floor(r() * 10)}`,
  name: `${word(r, 7)} ${word(r, 9)}`,
  address: { street: `${Math.floor(r() * 200)} ${word(r, 10)} street`, city: word(r, 8), zip: word(r, 5) },
  tags: [word(r, 5), word(r, 6), word(r, 4)],
  comment: Array.from({ length: 14 }, () => word(r, 1 + Math.floor(r() * 9))).join(' '),
  description: Array.from({ length: 90 }, () => word(r, 1 + Math.floor(r() * 9))).join(' '),
  meta: { source: 'web', version: 3, agent: `Mozilla/5.0 ${word(r, 40)}` },
});

const wideRules = (encrypt) => [
  { key: 'id', path: 'id', primary_key: true, nullable: false },
  { key: 'email_sha256', path: 'email', hash_method: 'sha256' },
  encrypt
    ? { key: 'ssn', path: 'ssn', encrypt_method: 'aes-256-gcm', encrypt_key: 'bench passphrase' }
    : { key: 'ssn', path: 'ssn' },
  { key: 'amount', path: 'amount', cast: 'float' },
  { key: 'active', path: 'active', cast: 'bool' },
  { key: 'signed_at', path: 'signed_at', cast: 'datetime', cast_format: '%Y-%m-%d %H:%M:%S' },
  { key: 'name', path: 'name' },
  { key: 'street', path: 'address|street' },
  { key: 'city', path: 'address|city' },
  { key: 'comment', path: 'comment' },
  { key: 'description', path: 'description' },
  { key: 'agent', path: 'meta|agent' },
];

export const SHAPES = [
  {
    name: 'flat 20-field CDC record',
    id: 'flat',
    message: flatMessage,
    rules: FLAT_FIELDS.map((f) => ({ key: f, path: `after|${f}` })),
    jq: `{${jqCopies(FLAT_FIELDS.map((f) => [f, `.after.${f}`]))}}`,
    jqEquivalent: true,
    jqMessages: 20000,
    target: { ofFloor: 0.5 },
  },
  {
    name: 'nested order, 2 arrays x 10',
    id: 'nested',
    message: nestedMessage,
    rules: NESTED_COLUMNS.map(([key, path]) => ({ key, path })),
    jq: `. as $m | ([(.items | length), (.shipments | length)] | max) as $n | range(0; $n) as $i | {${jqCopies(
      NESTED_COLUMNS.map(([key, , expr]) => [key, expr]),
    )}}`,
    jqEquivalent: true,
    jqMessages: 6000,
    target: { ofFloor: 0.25 },
  },
  {
    name: '1 KB record, hash+encrypt+3 casts',
    id: 'wide',
    message: wideMessage,
    rules: wideRules(true),
    plainRules: wideRules(false),
    // jq has no hash and no cipher: this program does the casts and copies the
    // email and ssn as they are, so jq does less work than the mapper here.
    jq: `{id, email_sha256: .email, ssn, amount: (.amount | tonumber), active: (.active | ascii_downcase | . == "yes" or . == "true" or . == "1"), signed_at: (.signed_at | strptime("%Y-%m-%d %H:%M:%S") | strftime("%Y-%m-%dT%H:%M:%S")), name, street: .address.street, city: .address.city, comment, description, agent: .meta.agent}`,
    jqEquivalent: false,
    jqMessages: 16000,
    // No floor target for this shape: its targets are 4x jq and encryption at most 2x plain.
    target: { ofFloor: 0 },
  },
];

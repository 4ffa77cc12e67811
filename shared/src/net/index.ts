// Outbound connections to addresses users configure: the SSRF policy and JSON over HTTPS under it.
export * from './embedded-ipv4.js';
export * from './outbound-policy.js';
export * from './outbound-http.js';
export * from './free-port.js';

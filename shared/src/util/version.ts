/** Version of the Sluice interface (spec section 9) and of this build. */
export const SLUICE_VERSION = '0.1.0';
export const API_GROUP = 'sluice.dev';
export const API_VERSION = 'v1alpha1';

export const OPERATOR_PACKAGE = '@sluice/operator';

/** The team examples/ name (tests replace it with their own) and the objects of examples/kafka-to-kafka-pipeline.yaml. */
export const EXAMPLE_TEAM = '3f1c9a52-6d7e-4b8f-9a0b-1c2d3e4f5a6b';
export const PIPELINE = '0b6f7a7e-8c1d-4f5e-9a3b-1c2d3e4f5a65';
export const SOURCE = '0b6f7a7e-8c1d-4f5e-9a3b-1c2d3e4f5a61';
export const TARGET = '0b6f7a7e-8c1d-4f5e-9a3b-1c2d3e4f5a62';
export const DATAMODEL = '0b6f7a7e-8c1d-4f5e-9a3b-1c2d3e4f5a63';
export const SUBSCRIPTION = '0b6f7a7e-8c1d-4f5e-9a3b-1c2d3e4f5a64';

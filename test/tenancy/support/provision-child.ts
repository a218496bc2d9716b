// Provisions the tenants given as JSON in argv[2] and prints the result: a second process for the concurrency test.
import { provisionTenants } from '../../../src/tenancy/provision.ts';

const options = JSON.parse(process.argv[2]);
const provisioned = await provisionTenants(options);
process.stdout.write(JSON.stringify(provisioned));

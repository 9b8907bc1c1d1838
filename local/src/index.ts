export { DEMO_LOGIN, startDemoSite, type DemoSite } from './demo-site-server.ts';

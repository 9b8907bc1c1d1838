export { DEMO_LOGIN, DEMO_SITE_ROOT, startDemoSite, type DemoSite } from './demo-site-server.ts';

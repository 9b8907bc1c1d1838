export { DEMO_LOGIN, startDemoSite, type DemoShopSite, type DemoSite } from './demo-site-server.ts';
export { DEMO_SHOP_GROUPS, SHOP_SITEMAPS } from './demo-site-shop.ts';

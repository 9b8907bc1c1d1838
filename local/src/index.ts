export {
  DEMO_LOGIN,
  startDemoSite,
  type DemoShopSite,
  type DemoSite,
  type DemoSiteOptions,
} from './demo-site-server.ts';
export {
  DEMO_SHOP_GROUPS,
  DEMO_SHOP_PATHS,
  DEMO_SHOP_TEMPLATES,
  SHOP_SITEMAPS,
  type DemoShopTemplate,
  type MainThreadWork,
  type SlowTemplate,
} from './demo-site-shop.ts';

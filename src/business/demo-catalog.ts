/**
 * The fixed reference data the demo seed draws from: regions, services, deal types, parts,
 * knowledge-base articles and note templates of a home-services (plumbing / HVAC) company.
 * Money in integer cents; durations in minutes.
 */

export interface RegionProfile {
  cities: string[];
  region: string;
  postal_prefix: string;
  area_codes: string[];
  droplet_region: string;
}

/** One profile per company position (the first company is the main one; later ones cycle). */
export const REGIONS: RegionProfile[] = [
  {
    cities: [
      'Salt Lake City',
      'Sandy',
      'Draper',
      'Murray',
      'West Jordan',
      'South Jordan',
      'Lehi',
      'Orem',
      'Provo',
      'Holladay',
      'Cottonwood Heights',
      'Bountiful',
    ],
    region: 'UT',
    postal_prefix: '84',
    area_codes: ['801', '385'],
    droplet_region: 'nyc1',
  },
  {
    cities: ['Boise', 'Meridian', 'Nampa', 'Eagle', 'Kuna', 'Star', 'Caldwell'],
    region: 'ID',
    postal_prefix: '83',
    area_codes: ['208', '986'],
    droplet_region: 'sfo3',
  },
  {
    cities: ['Denver', 'Aurora', 'Lakewood', 'Littleton', 'Arvada', 'Englewood', 'Golden'],
    region: 'CO',
    postal_prefix: '80',
    area_codes: ['303', '720'],
    droplet_region: 'nyc3',
  },
];

export type Trade = 'plumbing' | 'hvac';

export interface ServiceType {
  service: string;
  trade: Trade;
  duration_minutes: number;
  /** Labour line: hours billed and rate per hour in cents; a flat-rate service bills 1 × rate. */
  labor_hours: number;
  labor_rate_cents: number;
  /** Relative frequency among random visits. */
  weight: number;
  /** Chance that parts are used (0..1). */
  parts_chance: number;
  /** An estimate visit: no invoice, no parts. */
  estimate?: boolean;
}

export const SERVICES: ServiceType[] = [
  {
    service: 'Estimate',
    trade: 'plumbing',
    duration_minutes: 60,
    labor_hours: 0,
    labor_rate_cents: 0,
    weight: 6,
    parts_chance: 0,
    estimate: true,
  },
  {
    service: 'Drain cleaning',
    trade: 'plumbing',
    duration_minutes: 90,
    labor_hours: 1,
    labor_rate_cents: 18900,
    weight: 12,
    parts_chance: 0.2,
  },
  {
    service: 'Leak repair',
    trade: 'plumbing',
    duration_minutes: 120,
    labor_hours: 2,
    labor_rate_cents: 13500,
    weight: 10,
    parts_chance: 0.8,
  },
  {
    service: 'Water heater repair',
    trade: 'plumbing',
    duration_minutes: 120,
    labor_hours: 2,
    labor_rate_cents: 13500,
    weight: 9,
    parts_chance: 0.85,
  },
  {
    service: 'Water heater flush',
    trade: 'plumbing',
    duration_minutes: 60,
    labor_hours: 1,
    labor_rate_cents: 11800,
    weight: 5,
    parts_chance: 0.3,
  },
  {
    service: 'Toilet repair',
    trade: 'plumbing',
    duration_minutes: 60,
    labor_hours: 1,
    labor_rate_cents: 13500,
    weight: 8,
    parts_chance: 0.9,
  },
  {
    service: 'Garbage disposal install',
    trade: 'plumbing',
    duration_minutes: 90,
    labor_hours: 1.5,
    labor_rate_cents: 13500,
    weight: 4,
    parts_chance: 1,
  },
  {
    service: 'Sewer camera inspection',
    trade: 'plumbing',
    duration_minutes: 90,
    labor_hours: 1,
    labor_rate_cents: 29900,
    weight: 4,
    parts_chance: 0,
  },
  {
    service: 'Backflow test',
    trade: 'plumbing',
    duration_minutes: 60,
    labor_hours: 1,
    labor_rate_cents: 9500,
    weight: 4,
    parts_chance: 0.1,
  },
  {
    service: 'AC tune-up',
    trade: 'hvac',
    duration_minutes: 90,
    labor_hours: 1,
    labor_rate_cents: 12900,
    weight: 10,
    parts_chance: 0.4,
  },
  {
    service: 'Furnace tune-up',
    trade: 'hvac',
    duration_minutes: 90,
    labor_hours: 1,
    labor_rate_cents: 12900,
    weight: 10,
    parts_chance: 0.4,
  },
  {
    service: 'AC repair',
    trade: 'hvac',
    duration_minutes: 120,
    labor_hours: 2,
    labor_rate_cents: 14500,
    weight: 8,
    parts_chance: 0.9,
  },
  {
    service: 'Furnace repair',
    trade: 'hvac',
    duration_minutes: 120,
    labor_hours: 2,
    labor_rate_cents: 14500,
    weight: 8,
    parts_chance: 0.9,
  },
  {
    service: 'Thermostat install',
    trade: 'hvac',
    duration_minutes: 60,
    labor_hours: 1,
    labor_rate_cents: 12500,
    weight: 4,
    parts_chance: 1,
  },
  {
    service: 'Emergency call',
    trade: 'plumbing',
    duration_minutes: 120,
    labor_hours: 2,
    labor_rate_cents: 19500,
    weight: 4,
    parts_chance: 0.6,
  },
  {
    service: 'Commercial maintenance visit',
    trade: 'hvac',
    duration_minutes: 120,
    labor_hours: 2,
    labor_rate_cents: 15500,
    weight: 5,
    parts_chance: 0.6,
  },
];

export interface DealType {
  title: string;
  min_dollars: number;
  max_dollars: number;
  /** More likely for commercial contacts. */
  commercial: boolean;
}

export const DEAL_TYPES: DealType[] = [
  { title: 'Water heater replacement', min_dollars: 1400, max_dollars: 3200, commercial: false },
  { title: 'Tankless water heater install', min_dollars: 3200, max_dollars: 5800, commercial: false },
  { title: 'Whole-home repipe', min_dollars: 6500, max_dollars: 15000, commercial: false },
  { title: 'AC replacement (3 ton)', min_dollars: 5200, max_dollars: 9800, commercial: false },
  { title: 'Furnace replacement', min_dollars: 3800, max_dollars: 7500, commercial: false },
  { title: 'Heat pump install', min_dollars: 7500, max_dollars: 16000, commercial: false },
  { title: 'Ductless mini-split install', min_dollars: 3500, max_dollars: 8500, commercial: false },
  { title: 'Bathroom rough-in', min_dollars: 2500, max_dollars: 6000, commercial: false },
  { title: 'Kitchen remodel plumbing', min_dollars: 1800, max_dollars: 5200, commercial: false },
  { title: 'Sewer line replacement', min_dollars: 4500, max_dollars: 14000, commercial: false },
  { title: 'Commercial boiler service contract', min_dollars: 4800, max_dollars: 18000, commercial: true },
  { title: 'Rooftop unit replacement', min_dollars: 12000, max_dollars: 38000, commercial: true },
  { title: 'Annual HVAC maintenance plan', min_dollars: 2400, max_dollars: 12000, commercial: true },
  { title: 'Grease trap install', min_dollars: 3500, max_dollars: 9500, commercial: true },
  { title: 'Backflow preventer testing contract', min_dollars: 900, max_dollars: 4200, commercial: true },
  { title: 'Tenant improvement plumbing', min_dollars: 8000, max_dollars: 26000, commercial: true },
];

export interface PartType {
  name: string;
  category: Trade;
  /** Unit cost range in cents. */
  min_cost_cents: number;
  max_cost_cents: number;
}

export const PARTS: PartType[] = [
  { name: 'Water heater anode rod', category: 'plumbing', min_cost_cents: 2200, max_cost_cents: 3800 },
  { name: 'Water heater thermocouple', category: 'plumbing', min_cost_cents: 900, max_cost_cents: 1800 },
  { name: 'Gas control valve', category: 'plumbing', min_cost_cents: 9500, max_cost_cents: 18500 },
  { name: 'T&P relief valve 3/4"', category: 'plumbing', min_cost_cents: 1400, max_cost_cents: 2600 },
  { name: 'Heating element 4500W', category: 'plumbing', min_cost_cents: 1600, max_cost_cents: 3200 },
  { name: 'Expansion tank 2 gal', category: 'plumbing', min_cost_cents: 3500, max_cost_cents: 5500 },
  { name: 'Toilet fill valve', category: 'plumbing', min_cost_cents: 900, max_cost_cents: 1600 },
  { name: 'Toilet flapper', category: 'plumbing', min_cost_cents: 400, max_cost_cents: 900 },
  { name: 'Wax ring with flange', category: 'plumbing', min_cost_cents: 500, max_cost_cents: 1200 },
  { name: 'Kitchen faucet cartridge', category: 'plumbing', min_cost_cents: 1800, max_cost_cents: 4200 },
  {
    name: 'Shutoff valve 1/2" quarter-turn',
    category: 'plumbing',
    min_cost_cents: 700,
    max_cost_cents: 1500,
  },
  { name: 'PEX-A pipe 1/2" (100 ft)', category: 'plumbing', min_cost_cents: 4500, max_cost_cents: 7500 },
  { name: 'PEX crimp rings (bag of 50)', category: 'plumbing', min_cost_cents: 1100, max_cost_cents: 1900 },
  { name: 'Copper elbow 3/4"', category: 'plumbing', min_cost_cents: 200, max_cost_cents: 500 },
  { name: 'P-trap kit 1-1/2"', category: 'plumbing', min_cost_cents: 700, max_cost_cents: 1400 },
  { name: 'Garbage disposal 3/4 HP', category: 'plumbing', min_cost_cents: 13500, max_cost_cents: 21000 },
  { name: 'Sump pump 1/3 HP', category: 'plumbing', min_cost_cents: 11000, max_cost_cents: 19500 },
  { name: 'Backflow repair kit', category: 'plumbing', min_cost_cents: 3800, max_cost_cents: 7200 },
  { name: 'Pressure reducing valve', category: 'plumbing', min_cost_cents: 8500, max_cost_cents: 14500 },
  { name: 'Hose bib frost-free 12"', category: 'plumbing', min_cost_cents: 1900, max_cost_cents: 3400 },
  { name: 'Drain auger cable 50 ft', category: 'plumbing', min_cost_cents: 6500, max_cost_cents: 9800 },
  { name: 'Tankless descaling kit', category: 'plumbing', min_cost_cents: 2500, max_cost_cents: 4500 },
  { name: 'Capacitor 45/5 MFD', category: 'hvac', min_cost_cents: 1200, max_cost_cents: 2800 },
  { name: 'Contactor 30A 2-pole', category: 'hvac', min_cost_cents: 1500, max_cost_cents: 3200 },
  { name: 'Condenser fan motor 1/4 HP', category: 'hvac', min_cost_cents: 9500, max_cost_cents: 16500 },
  { name: 'Blower motor 1/2 HP', category: 'hvac', min_cost_cents: 16500, max_cost_cents: 28000 },
  { name: 'Flame sensor', category: 'hvac', min_cost_cents: 900, max_cost_cents: 2200 },
  { name: 'Hot surface igniter', category: 'hvac', min_cost_cents: 1800, max_cost_cents: 4200 },
  { name: 'Inducer motor assembly', category: 'hvac', min_cost_cents: 18000, max_cost_cents: 32000 },
  { name: 'Pressure switch', category: 'hvac', min_cost_cents: 2200, max_cost_cents: 4800 },
  {
    name: 'Furnace filter 16x25x1 (case of 12)',
    category: 'hvac',
    min_cost_cents: 3600,
    max_cost_cents: 6000,
  },
  { name: 'Furnace filter 20x25x4 MERV 11', category: 'hvac', min_cost_cents: 2400, max_cost_cents: 4200 },
  { name: 'Smart thermostat', category: 'hvac', min_cost_cents: 12000, max_cost_cents: 21000 },
  { name: 'Programmable thermostat', category: 'hvac', min_cost_cents: 4500, max_cost_cents: 8500 },
  { name: 'R-410A refrigerant (25 lb)', category: 'hvac', min_cost_cents: 22000, max_cost_cents: 36000 },
  { name: 'Condensate pump', category: 'hvac', min_cost_cents: 5500, max_cost_cents: 9500 },
  { name: 'Float switch', category: 'hvac', min_cost_cents: 1500, max_cost_cents: 2800 },
  { name: 'TXV valve 3 ton', category: 'hvac', min_cost_cents: 9800, max_cost_cents: 17500 },
  { name: 'Evaporator coil cleaner', category: 'hvac', min_cost_cents: 900, max_cost_cents: 1700 },
  { name: 'Thermostat wire 18/5 (250 ft)', category: 'hvac', min_cost_cents: 4200, max_cost_cents: 7200 },
  { name: 'Gas valve 24V', category: 'hvac', min_cost_cents: 11000, max_cost_cents: 19000 },
  { name: 'Limit switch', category: 'hvac', min_cost_cents: 1200, max_cost_cents: 2600 },
  { name: 'Duct tape foil 2.5" roll', category: 'hvac', min_cost_cents: 1100, max_cost_cents: 1800 },
  {
    name: 'Mini-split line set 1/4 x 1/2 (25 ft)',
    category: 'hvac',
    min_cost_cents: 8500,
    max_cost_cents: 14000,
  },
];

export const PART_LOCATIONS = [
  'Warehouse A-1',
  'Warehouse A-2',
  'Warehouse A-3',
  'Warehouse B-1',
  'Warehouse B-2',
  'Truck 1',
  'Truck 2',
  'Truck 3',
  'Truck 4',
];

export interface KbSeedArticle {
  title: string;
  tags: string[];
  body: string;
}

export const KB_ARTICLES: KbSeedArticle[] = [
  {
    title: 'Refund policy',
    tags: ['billing', 'policy'],
    body: 'Refunds are issued to the original payment method. Labour is refundable within 30 days if the repair failed and a return visit could not fix it. Parts are refundable when unused and returned within 14 days. Card processing fees of 2.9 % are returned on card refunds; the fixed 30-cent fee is not. Refunds above $500 need an admin.',
  },
  {
    title: 'After-hours emergency pricing',
    tags: ['pricing', 'dispatch'],
    body: 'Emergency calls between 6 pm and 7 am and on holidays carry a $195 call-out fee that includes the first hour. Each further hour is billed at the standard rate. Dispatch must tell the customer the call-out fee before sending a technician.',
  },
  {
    title: 'How to reset a tankless water heater error code',
    tags: ['plumbing', 'tankless', 'troubleshooting'],
    body: 'Most error codes clear after turning the unit off at the breaker for 60 seconds. Codes 11 and 12 (ignition) usually mean a gas supply issue or a dirty flame rod; code 10 points to a blocked vent. If the code returns within a day, schedule a descaling visit.',
  },
  {
    title: 'Warranty terms for water heater installs',
    tags: ['warranty', 'plumbing'],
    body: 'Installations carry a 2-year labour warranty on top of the manufacturer tank warranty (6 to 12 years). The warranty is void if the anode rod is not inspected every 3 years. Register the serial number with the manufacturer within 30 days of install.',
  },
  {
    title: 'Dispatch: avoiding double bookings',
    tags: ['dispatch', 'scheduling'],
    body: 'Always check technician availability before confirming a time. Visits are booked in 2-hour windows starting at 8:00, 10:30, 13:00 and 15:30. The scheduling system refuses overlapping visits for the same technician; offer another window or another technician instead.',
  },
  {
    title: 'AC tune-up checklist',
    tags: ['hvac', 'maintenance'],
    body: 'Replace or clean the filter, clean the condenser coil, check refrigerant pressures and superheat, test capacitors and contactor, flush the condensate line, measure the temperature split (15 to 20 °F), and note the age of the unit on the work order.',
  },
  {
    title: 'Furnace tune-up checklist',
    tags: ['hvac', 'maintenance'],
    body: 'Inspect the heat exchanger for cracks, clean the flame sensor, test the igniter, check the gas pressure, verify the limit and pressure switches, measure carbon monoxide at the flue, and replace the filter.',
  },
  {
    title: 'Payment terms',
    tags: ['billing', 'policy'],
    body: 'Residential invoices are due in 14 days, commercial invoices in 30 days. We accept cards, ACH, checks and cash. Overdue invoices get a reminder at 7 and 21 days past due; after 45 days the account is put on hold for non-emergency work.',
  },
  {
    title: 'Sewer camera inspection: what to tell the customer',
    tags: ['plumbing', 'sales'],
    body: 'Explain that the inspection finds roots, bellies and breaks before they cause a backup. Share the recording with the customer. A belly or break usually leads to a sewer line replacement estimate; roots can be cleared with hydro-jetting.',
  },
  {
    title: 'Heat pump vs furnace: talking points',
    tags: ['hvac', 'sales'],
    body: 'Heat pumps heat and cool with one unit and qualify for rebates; cold-climate models work down to -13 °F. Keep a gas furnace as backup (dual fuel) where winters are harsh. Quote both options when the furnace is older than 15 years.',
  },
  {
    title: 'Handling a customer who wants their data deleted',
    tags: ['gdpr', 'policy'],
    body: 'Erasure removes the name, contact details, address, notes and stored payment methods. Invoices and payments are kept for 7 years for tax purposes, with the name replaced. Erasure cannot be undone; the owner has to confirm it with the typed phrase.',
  },
  {
    title: 'Backflow testing for commercial accounts',
    tags: ['plumbing', 'commercial', 'compliance'],
    body: 'Backflow preventers must be tested every year and the report filed with the water utility within 10 days. Book the test a month before the due date and email the report to the property manager.',
  },
  {
    title: 'Refrigerant handling and EPA 608',
    tags: ['hvac', 'compliance'],
    body: 'Only EPA 608 certified technicians may recover or charge refrigerant. Log every pound added or recovered on the work order. R-22 systems are repaired only with reclaimed refrigerant; recommend replacement.',
  },
  {
    title: 'Truck stock: minimum levels',
    tags: ['inventory'],
    body: 'Each truck carries at least two of every fast-moving part (capacitors, contactors, flappers, fill valves, shutoff valves). When a part falls to its reorder point, the office orders it the same day from the supplier.',
  },
  {
    title: 'Estimate visits: how to write a proposal',
    tags: ['sales', 'deals'],
    body: 'Offer good, better and best options. Include permit fees, haul-away and a start date. Send the proposal within 24 hours of the visit and follow up after 3 days; proposals left for more than two weeks rarely close.',
  },
  {
    title: 'Maintenance plan benefits',
    tags: ['sales', 'maintenance'],
    body: 'Plan members get two tune-ups a year, priority scheduling, no call-out fee and 15 % off repairs. Commercial plans are priced per unit. Offer the plan at the end of every tune-up.',
  },
  {
    title: 'Frozen pipe response',
    tags: ['plumbing', 'emergency'],
    body: 'Ask the customer to shut off the main valve and open the faucets. Never use an open flame to thaw pipes. Replace burst sections with PEX and insulate exposed pipes in crawl spaces and garages.',
  },
  {
    title: 'Carbon monoxide alarm procedure',
    tags: ['hvac', 'safety', 'emergency'],
    body: 'If a CO alarm is sounding, tell the occupants to leave the house and call the gas company. The technician measures CO at every appliance and does not restart the furnace until the source is found and fixed.',
  },
  {
    title: 'Customer communication templates',
    tags: ['office', 'email'],
    body: 'Use the appointment reminder the day before a visit, the on-my-way text when the technician leaves, and the invoice email after the job. Keep emails short and include the invoice number and the amount due.',
  },
  {
    title: 'Deal stages explained',
    tags: ['sales', 'deals'],
    body: 'New: a request came in. Qualified: budget and timing confirmed. Estimate scheduled: a visit is booked. Proposal sent: the customer has a written quote. Negotiation: the customer asked for changes. Won or lost closes the deal.',
  },
  {
    title: 'Water pressure troubleshooting',
    tags: ['plumbing', 'troubleshooting'],
    body: 'Normal pressure is 40 to 80 psi. Above 80 psi, test and replace the pressure reducing valve. Low pressure at one fixture points to a clogged aerator or cartridge; low pressure everywhere points to the PRV or the supply line.',
  },
  {
    title: 'Thermostat wiring quick reference',
    tags: ['hvac', 'troubleshooting'],
    body: 'R is 24 V power, C is common, W is heat, Y is cooling, G is the fan, O/B is the heat pump reversing valve. Smart thermostats need a C wire; add one with the spare conductor or an adapter kit.',
  },
  {
    title: 'Infrastructure: what the server health checks mean',
    tags: ['infrastructure', 'internal'],
    body: 'The managed server runs the backend, the web frontend, the database, Redis (the job queue) and the MCP endpoint. A failing Redis check with a growing queue usually means the background workers are overloaded: scale workers or resize the server.',
  },
  {
    title: 'Onboarding a new technician',
    tags: ['team', 'internal'],
    body: 'New technicians ride along for two weeks, get a truck stock list, an employee account with the employee role, and a read-only view of the knowledge base. Admin rights are for the office manager and the owner only.',
  },
  {
    title: 'Drain cleaning: when to recommend hydro-jetting',
    tags: ['plumbing', 'sales'],
    body: 'Recommend hydro-jetting when a main line clogs more than twice a year or the camera shows heavy grease or roots. Snaking restores flow; jetting cleans the pipe walls. Quote both and note the camera findings on the invoice.',
  },
];

export const NOTE_TEMPLATES = [
  'Called to confirm the appointment window.',
  'Customer asked about tankless water heater pricing.',
  'Prefers text messages over phone calls.',
  'Gate code {code}. Dog in the backyard.',
  'Asked for a copy of the last invoice.',
  'Interested in the maintenance plan; follow up after the next visit.',
  'Left a voicemail about scheduling the annual tune-up.',
  'Mentioned the upstairs bathroom drains slowly.',
  'Property manager approves work up to $1,500 without a call.',
  'Requested morning appointments only.',
  'Happy with the last visit; left a review.',
  'Asked whether we service boilers.',
];

export const APPOINTMENT_NOTES = [
  'Park in the driveway.',
  'Customer works from home; ring the side door.',
  'Access through the back alley.',
  'Bring shoe covers.',
  'Tenant will let the technician in.',
  'Check the water heater age while on site.',
];

export const REFUND_REASONS = [
  'Customer goodwill',
  'Duplicate charge',
  'Overcharged for parts',
  'Repair did not hold',
  'Service not completed',
];

export const CARD_BRANDS = ['visa', 'mastercard', 'amex', 'discover'];
export const BANKS = ['Chase', 'Wells Fargo', 'Zions Bank', 'US Bank', 'Mountain America CU'];

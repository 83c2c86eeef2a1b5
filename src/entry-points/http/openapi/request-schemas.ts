import { SEND_LIMITS, sendBodySchema } from '../../../messaging/send-request.js';
import { calculateBodySchema } from '../../../pricing/calculate-request.js';
import { joiToJsonSchema, type JsonSchema } from '../joi-json-schema.js';
import { annotate } from './schema-vocabulary.js';

// Request bodies: the joi schemas, converted, plus what joi's custom code and the use cases check

export const sendRequestSchema = (): JsonSchema =>
  annotate(joiToJsonSchema(sendBodySchema), {
    '': {
      description:
        'Unknown fields are refused (1110, type `object.unknown`). A JSON `null` for an optional field is the same as leaving it out. ' +
        'All issues are reported at once in `details[]`.',
    },
    to: {
      description:
        `Recipients, 1–${SEND_LIMITS.maxRecipients}. Each entry loses its spaces and dashes, must then be at least 8 characters and parse as a ` +
        'possible number (E.164, or national format in the merchant\'s country), else 1110 with `field: "to[i]"`. Duplicates are kept: ' +
        'each entry is its own recipient, identified by its position (`recipient_index`).',
    },
    message: {
      // the custom() rule of the joi schema: code points, not UTF-16 units
      maxLength: SEND_LIMITS.maxMessageCharacters,
      description:
        `1–${SEND_LIMITS.maxMessageCharacters} characters (Unicode code points); an unpaired UTF-16 surrogate is refused. ` +
        'Segments follow GSM 03.38 (extension characters `^{}\\[~]|€` and form feed count 2 septets) or UCS-2 (any other character; ' +
        'a character outside the BMP counts 2 units): 1 segment up to 160 septets / 70 units, else 153 / 67 per part, a part never ' +
        'splitting an escape or surrogate pair. Segments are counted honestly, with no 10-segment cap (1 600 characters can need 11 GSM ' +
        'or 24 UCS-2 segments).',
    },
    sender_id: { description: `1–${SEND_LIMITS.maxSenderIdLength} characters: letters, digits, space and \`-_.&\`.` },
    sending_type: {
      description:
        '`scheduled` needs `scheduled_dates` and `recurring` needs `recurring_schedule`; any other schedule field for the sending type is 1110.',
    },
    scheduled_dates: {
      description:
        "Local dates and times in the merchant's time zone (default Africa/Kinshasa), each strictly after the moment the request is " +
        'validated. A time in a spring-forward gap is 1110; an ambiguous one (fall-back hour) takes its first occurrence; two entries ' +
        'naming the same instant are 1110.',
    },
    recurring_schedule: {
      description:
        "Repeats in the merchant's time zone: weekly on `start_date`'s weekday, monthly on its day of month (months without it are " +
        'skipped), yearly on its month and day (29 February only in leap years). A past `start_date` is allowed; only future ' +
        'occurrences count and at least one is required. An occurrence in a spring-forward gap moves forward by the gap; an ambiguous ' +
        'one takes its first occurrence. The whole schedule is charged at submit; recipients × segments × occurrences may not exceed 5 000 ' +
        '(1110 naming `recurring_schedule`).',
    },
    'recurring_schedule.end_date': {
      description:
        'Inclusive. Before `start_date` is 1110. `null` or absent: occurrences are pre-computed over 365 days and the schedule completes there.',
    },
    'recurring_schedule.times': { description: 'Distinct local times `HH:mm`.' },
    callback_url: {
      description:
        'An absolute `https://` URL as written (`https:host` is refused), at most 2 048 characters, without credentials. It receives the ' +
        "same events as the key's `webhook_url` (each event once per distinct URL), without Basic credentials. Production refuses one " +
        'whose host is or resolves to a non-public address (loopback, private, link-local, CGNAT, unique- or site-local, multicast, ' +
        'reserved, and IPv6 forms embedding such an IPv4: mapped, compatible, NAT64, 6to4; Teredo always); embedded mode also accepts `http://localhost`.',
    },
  });

export const calculateRequestSchema = (): JsonSchema =>
  annotate(joiToJsonSchema(calculateBodySchema), {
    '': { description: 'The field of the other mode, if sent, is checked but unused. Unknown fields are refused (1110).' },
    amount: { description: 'Required in `amount_to_sms` mode: a wallet amount.' },
    sms_count: { description: 'Required in `sms_to_amount` mode.' },
  });

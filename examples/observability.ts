import { metrics, trace } from '@opentelemetry/api'
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus'
import { MeterProvider } from '@opentelemetry/sdk-metrics'
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  ConsoleSpanExporter,
} from '@opentelemetry/sdk-trace-base'
import { filter, firstValueFrom } from 'rxjs'
import { semaphore } from 'rx-consul-semaphore'

// Metrics: served for Prometheus to scrape, on loopback here (METRICS_PORT, default 9464).
const port = Number(process.env['METRICS_PORT'] ?? 9464)
const prometheus = new PrometheusExporter({ host: '127.0.0.1', port, preventServerStart: true })
const meterProvider = new MeterProvider({ readers: [prometheus] })
// Spans: printed here; in production, an OTLP exporter to your collector.
const tracerProvider = new BasicTracerProvider({
  spanProcessors: [new BatchSpanProcessor(new ConsoleSpanExporter())],
})
// Registered before the first contender starts: contenders report to the global providers.
metrics.setGlobalMeterProvider(meterProvider)
trace.setGlobalTracerProvider(tracerProvider)
await prometheus.startServer()

const sem = semaphore({ prefix: 'service/reports/lock', limit: 3 }) // CONSUL_HTTP_ADDR, ...
sem.holding$.subscribe()
await firstValueFrom(sem.holding$.pipe(filter(Boolean)))
console.log(`holding a slot; metrics on http://127.0.0.1:${port}/metrics until Ctrl-C`)

await new Promise((stop) => process.once('SIGINT', stop))
await sem.close()
await meterProvider.shutdown() // stops the /metrics server too
await tracerProvider.shutdown() // prints the spans still buffered: the wait and the tenure

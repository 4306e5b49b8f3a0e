import CaretakerCore
import HTTPTypes
import Hummingbird
import Logging
import Postgres

/// The dashboard's HTTP side: three GET routes over `DashboardDatabase`, behind a
/// middleware that answers 405 to anything but GET and HEAD, asks for basic auth
/// when credentials are configured, and sets headers that forbid scripts and framing.
public struct DashboardServer: Sendable {
    public let configuration: Configuration
    public let database: DashboardDatabase
    public let credentials: BasicCredentials?

    public init(configuration: Configuration, database: DashboardDatabase, credentials: BasicCredentials?) {
        self.configuration = configuration
        self.database = database
        self.credentials = credentials
    }

    /// The application listening on `address`; `onListening` gets the port it bound (useful with port 0).
    public func application(
        address: ListenAddress, logger: Logger,
        onListening: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        Application(
            router: router(logger: logger),
            configuration: .init(address: .hostname(address.host, port: address.port), serverName: nil),
            onServerRunning: { channel in await onListening(channel.localAddress?.port ?? address.port) },
            logger: logger)
    }

    func router(logger: Logger) -> Router<BasicRequestContext> {
        let router = Router(options: .autoGenerateHeadEndpoints)
        router.add(middleware: DashboardMiddleware(credentials: credentials))
        let configuration = configuration
        let database = database
        router.get("/") { request, _ in
            let windowText = request.uri.queryParameters.get("window") ?? TimeWindow.day.rawValue
            guard let window = TimeWindow(rawValue: windowText) else {
                throw DashboardError.badRequest("window must be 24h or 7d")
            }
            return try await Self.page(logger) {
                OverviewPage.render(
                    try await database.read {
                        try DashboardQueries.overview($0, configuration: configuration, window: window)
                    })
            }
        }
        router.get("/jobs/:name") { request, context in
            let name = context.parameters.get("name") ?? ""
            var query: [String: String] = [:]
            for (key, value) in request.uri.queryParameters where query[String(key)] == nil {
                query[String(key)] = String(value)
            }
            return try await Self.page(logger) {
                let filter = try RunFilter(query: query)
                return JobPage.render(
                    try await database.read {
                        try DashboardQueries.jobRuns($0, configuration: configuration, job: name, filter: filter)
                    })
            }
        }
        router.get("/runs/:id") { _, context in
            try await Self.page(logger) {
                guard let id = context.parameters.get("id").flatMap({ Int64($0) }) else {
                    throw DashboardError.notFound("no such run")
                }
                let found = try await database.read { try DashboardQueries.run($0, id: id) }
                return RunPage.render(found.run, now: found.now)
            }
        }
        return router
    }

    /// An HTML page; a `DashboardError` goes on (its own 400 or 404), any other is a 503: the database failed.
    static func page(_ logger: Logger, _ render: () async throws -> String) async throws -> Response {
        do {
            return html(.ok, try await render())
        } catch let error as DashboardError {
            throw error
        } catch {
            logger.error("dashboard read failed", metadata: ["error": "\(error)"])
            let hint =
                (error as? PostgresError)?.isUndefinedObject == true
                ? " — has `caretaker migrate` been run on this database?" : ""
            return html(
                .serviceUnavailable,
                errorPage("Database unavailable", "reading the run history failed: \(error)\(hint)"))
        }
    }

    static func html(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response(
            status: status, headers: [.contentType: "text/html; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    static func errorPage(_ title: String, _ message: String) -> String {
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>\(HTML.escape(title)) · caretaker</title></head>"
            + "<body><h1>\(HTML.escape(title))</h1><p>\(HTML.escape(message))</p><p><a href=\"/\">overview</a></p></body></html>\n"
    }
}

extension DashboardError: HTTPResponseError {
    public var status: HTTPResponse.Status {
        switch self {
        case .notFound: .notFound
        case .badRequest: .badRequest
        }
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        switch self {
        case .notFound(let message): DashboardServer.html(status, DashboardServer.errorPage("Not found", message))
        case .badRequest(let message): DashboardServer.html(status, DashboardServer.errorPage("Bad request", message))
        }
    }
}

/// GET and HEAD only; basic auth when configured; headers that keep the pages inert.
struct DashboardMiddleware<Context: RequestContext>: RouterMiddleware {
    let credentials: BasicCredentials?

    static var securityHeaders: HTTPFields {
        [
            HTTPField.Name("Content-Security-Policy")!:
                "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
            HTTPField.Name("X-Content-Type-Options")!: "nosniff",
            HTTPField.Name("Referrer-Policy")!: "no-referrer",
            .cacheControl: "no-store",
        ]
    }

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var response: Response
        if request.method != .get && request.method != .head {
            response = DashboardServer.html(
                .methodNotAllowed,
                DashboardServer.errorPage(
                    "Method not allowed", "the dashboard is read-only: only GET and HEAD are accepted"))
            response.headers[.allow] = "GET, HEAD"
        } else if let credentials, !credentials.accepts(authorization: request.headers[.authorization]) {
            response = DashboardServer.html(
                .unauthorized,
                DashboardServer.errorPage(
                    "Authentication required", "this dashboard asks for a user name and password"))
            response.headers[.wwwAuthenticate] = BasicCredentials.challenge
        } else {
            do {
                response = try await next(request, context)
            } catch let error as DashboardError {
                response = try error.response(from: request, context: context)
            } catch let error as any HTTPResponseError where error.status == .notFound {
                response = DashboardServer.html(
                    .notFound, DashboardServer.errorPage("Not found", "there is no page \(request.uri.path)"))
            } catch let error as any HTTPResponseError {
                response = try error.response(from: request, context: context)
            }
        }
        for field in Self.securityHeaders { response.headers[field.name] = field.value }
        return response
    }
}

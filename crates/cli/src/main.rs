fn main() {
    toolhost::cli::main()
}
